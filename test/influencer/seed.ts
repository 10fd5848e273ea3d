import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/db/database.js';
import { CATEGORY_SLUGS, type Category } from '../../src/influencer/categories.js';
import { newProfile } from '../../src/influencer/profiles.js';
import { insertProfiles, type ProfileEntry } from '../../src/influencer/profiles.store.js';
import { facetsOf } from '../../src/influencer/search-text.js';
import { seededAccountRow } from '../helpers/seeded-account.js';

const FIRST = [
  'Maria',
  'José',
  'Ana',
  'Łukasz',
  'Zoë',
  'Søren',
  'Ingrid',
  'Mohammed',
  'Aiko',
  'Olivia',
  'Émile',
  'Björn',
  'Nikolai',
  'Александр',
  'Мария',
  'Σοφία',
  'Γιώργος',
  'Jürgen',
  'Chloé',
  'Ravi',
  'Mei',
  '陈',
  'Liam',
  'Noah',
  'Emma',
  'Lucía',
  'Mateo',
  'Fatima',
  'Omar',
  'Yuki',
];
const LAST = [
  'Garcia',
  'Müller',
  'Nowak',
  'Dubois',
  'Rossi',
  'Smith',
  'Öztürk',
  'Kowalski',
  'Иванова',
  'Παπαδόπουλος',
  'Tanaka',
  'Kim',
  'Nguyễn',
  'Silva',
  'Jensen',
  'Straße',
  'O’Brien',
  'Lefèvre',
  'Andersson',
  'Haddad',
  'Patel',
  'Cohen',
  'Moreau',
  'Novák',
  'Horváth',
  'Wang',
  'López',
];

/** A deterministic pseudo-random source (mulberry32), so a seeded directory is the same each run. */
export function randomSource(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)] as T;
}

/**
 * `count` accounts with profiles, straight into the database (as the API would write them):
 * realistic, partly non-ASCII names; 1–3 categories; long-tailed follower counts.
 */
export async function seedDirectory(db: Db, count: number, seed = 1): Promise<ProfileEntry[]> {
  const random = randomSource(seed);
  const now = Date.now();
  const entries: ProfileEntry[] = [];
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const categories = new Set<Category>();
    const wanted = 1 + Math.floor(random() * 3);
    while (categories.size < wanted) categories.add(pick(random, CATEGORY_SLUGS));
    const profile = newProfile(
      id,
      {
        handle: `${pick(random, ['the', 'real', 'its', 'x', 'hey'])}_${i.toString(36)}`,
        display_name: `${pick(random, FIRST)} ${pick(random, LAST)}`,
        categories: [...categories],
      },
      now - Math.floor(random() * 3e10),
    );
    // Pareto-like: most have a handful, a few have millions.
    const followers = Math.floor(10 / Math.pow(1 - random() * 0.999999, 1.2)) - 10;
    entries.push({
      profile: { ...profile, followers_count: followers },
      facets: facetsOf(profile),
    });
  }
  await insertDirectory(db, entries);
  return entries;
}

/** Profiles with their accounts (confirmed, no usable password), straight into the database. */
export async function insertDirectory(db: Db, entries: readonly ProfileEntry[]): Promise<void> {
  const now = Date.now();
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < entries.length; i += 500) {
      const users = entries
        .slice(i, i + 500)
        .map(({ profile }) =>
          seededAccountRow(profile.id, `${profile.handle}@seed.test`, 'seeded: no password', now),
        );
      await trx.insertInto('users').values(users).execute();
    }
    await insertProfiles(trx, entries);
  });
}
