import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Category } from '../../src/influencer/categories.js';
import { newProfile } from '../../src/influencer/profiles.js';
import type { Profile } from '../../src/influencer/profiles.store.js';
import { facetsOf, foldSearchText } from '../../src/influencer/search-text.js';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp } from '../helpers/test-app.js';
import { insertDirectory } from './seed.js';

/**
 * Property: for any q, category and sort, paging through the directory at any limits (changing
 * from page to page) finds every match exactly once, in order, as a plain in-memory model of
 * API.md's rules says. The directory is fixed (seeded once, straight into the database), with
 * deliberate collisions: equal names in other cases and accents, equal counts, equal times.
 */

const DIRECTORY_SIZE = 400; // larger than a substring search's bounded walk at limits 1–3
const CATEGORIES: Category[] = ['art', 'music', 'tech'];
/** Letters that fold together in interesting ways, so queries hit many and tie often. */
const LETTERS = [
  'a',
  'A',
  'á',
  'b',
  'B',
  'e',
  'é',
  'É',
  's',
  'S',
  'ß',
  'æ',
  'σ',
  'Σ',
  'ς',
  'ж',
  'Ж',
  '1',
];

const word = fc
  .array(fc.constantFrom(...LETTERS), { minLength: 1, maxLength: 4 })
  .map((l) => l.join(''));
const displayName = fc.array(word, { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
const profileSeed = fc.record({
  name: displayName,
  handleStem: fc.stringMatching(/^[abes1_]{1,4}$/),
  categories: fc.subarray(CATEGORIES, { minLength: 1 }),
  followers: fc.integer({ min: 0, max: 4 }),
  createdAt: fc.integer({ min: 0, max: 5 }),
});

/** The model of API.md's matching rules, on the folded text. */
function matches(profile: Profile, q: string): boolean {
  const folded = foldSearchText(q.trim());
  const name = profile.search_name;
  // 1–2 characters as typed (`ßa` folds to 3) match word starts.
  const typed = [...q.trim().normalize('NFC')].length;
  if ([...folded].length <= 2 || typed <= 2) {
    const wordStarts = [0, ...[...name.matchAll(/ /g)].map((m) => (m.index as number) + 1)];
    return profile.handle.startsWith(folded) || wordStarts.some((i) => name.startsWith(folded, i));
  }
  return profile.handle.includes(folded) || name.includes(folded);
}

const byCodePoint = (a: string, b: string) => {
  const [x, y] = [[...a], [...b]];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = (x[i]?.codePointAt(0) as number) - (y[i]?.codePointAt(0) as number);
    if (d !== 0) return d;
  }
  return x.length - y.length;
};
const byId = (a: Profile, b: Profile) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const ORDER = {
  popular: (a: Profile, b: Profile) => b.followers_count - a.followers_count || byId(b, a),
  newest: (a: Profile, b: Profile) => b.created_at - a.created_at || byId(b, a),
  name: (a: Profile, b: Profile) => byCodePoint(a.search_name, b.search_name) || byId(a, b),
};

describe.each(backends)('paging the directory ($name)', (backend) => {
  let t: TestApp;
  let directory: Profile[];

  beforeAll(async () => {
    t = await TestApp.start(backend);
    const seeds = fc.sample(profileSeed, { numRuns: DIRECTORY_SIZE, seed: 7 });
    const base = Date.now();
    directory = seeds.map((s, i) => ({
      ...newProfile(
        randomUUID(),
        { handle: `h${s.handleStem}_${i}`, display_name: s.name, categories: s.categories },
        base + s.createdAt * 1000,
      ),
      followers_count: s.followers,
    }));
    await insertDirectory(
      t.db,
      directory.map((profile) => ({ profile, facets: facetsOf(profile) })),
    );
  });
  afterAll(() => t.close());

  /** A q that often matches: a piece of some name or handle, maybe in upper case; or none. */
  const query = fc.record({
    q: fc.option(
      fc.oneof(
        {
          weight: 4,
          arbitrary: fc
            .tuple(fc.nat(), fc.nat(), fc.integer({ min: 1, max: 4 }), fc.boolean())
            .map(([which, at, length, upper]) => {
              const profile = directory[which % directory.length] as Profile;
              const source = at % 2 === 0 ? profile.display_name : profile.handle;
              const points = [...source];
              const start = at % points.length;
              const piece =
                points
                  .slice(start, start + length)
                  .join('')
                  .trim() || 'a';
              return upper ? piece.toUpperCase() : piece;
            }),
        },
        { weight: 1, arbitrary: word },
      ),
      { nil: undefined, freq: 4 },
    ),
    // Mostly a category of the directory; sometimes one nobody is in.
    category: fc.option(fc.constantFrom<string>(...CATEGORIES, 'food'), { nil: undefined }),
    sort: fc.constantFrom('popular', 'newest', 'name') as fc.Arbitrary<keyof typeof ORDER>,
    limits: fc.array(fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 25 })), {
      minLength: 1,
      maxLength: 8,
    }),
  });

  it('finds every match exactly once, in order, at any limits', async () => {
    await fc.assert(
      fc.asyncProperty(query, async ({ q, category, sort, limits }) => {
        const expected = directory
          .filter((p) => q === undefined || matches(p, q))
          .filter((p) => category === undefined || p.categories.includes(category as Category))
          .sort(ORDER[sort])
          .map((p) => p.id);
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let page = 0; ; page++) {
          const limit = limits[page % limits.length] as number;
          const params = new URLSearchParams({ sort, limit: String(limit) });
          if (q !== undefined) params.set('q', q);
          if (category !== undefined) params.set('category', category);
          if (cursor !== undefined) params.set('cursor', cursor);
          // Each from its own address: the per-IP budget for anonymous requests is not the subject.
          const response = await t.call('GET', `/api/influencers?${params}`, { ip: randomIp() });
          expect(response.statusCode, response.body).toBe(200);
          const body = response.json();
          seen.push(...body.influencers.map((i: { id: string }) => i.id));
          // More than every match means a repeat: fail now rather than page on forever.
          expect(seen.length).toBeLessThanOrEqual(expected.length);
          if (body.next_cursor === null) break;
          expect(body.influencers).toHaveLength(limit); // only the last page may be short
          cursor = body.next_cursor;
        }
        expect(seen).toEqual(expected);
      }),
      { seed: 11, numRuns: 60 },
    );
  });

  it('finds every match of a text that was rare a moment ago and is common now', async () => {
    const popularFirst = async (q: string) => {
      const params = new URLSearchParams({ q, sort: 'popular', limit: '20' });
      const response = await t.call('GET', `/api/influencers?${params}`, { ip: randomIp() });
      expect(response.statusCode, response.body).toBe(200);
      return response.json().influencers.map((i: { id: string }) => i.id);
    };
    expect(await popularFirst('qzxv')).toEqual([]); // rare: none at all
    // Enough to make it common (over 5 matches per row asked for), spread over the popularity order.
    const newcomers = Array.from({ length: 150 }, (_, i) => ({
      ...newProfile(
        randomUUID(),
        { handle: `qzxv_${i}`, display_name: `Qzxv Fan ${i}`, categories: ['music'] },
        Date.now(),
      ),
      followers_count: (i * 7919) % 1000,
    }));
    await insertDirectory(
      t.db,
      newcomers.map((profile) => ({ profile, facets: facetsOf(profile) })),
    );
    directory = [...directory, ...newcomers];
    const expected = [...newcomers].sort(ORDER.popular).map((p) => p.id);
    expect(await popularFirst('qzxv')).toEqual(expected.slice(0, 20));
  });
});
