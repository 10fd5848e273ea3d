// The real-time scenarios' population, written straight into the service's database through its
// own store functions (loaded through tsx): registering 10,000 accounts over the API would cost
// 10,000 argon2id hashes, minutes of set-up that measure nothing here. Half the accounts are
// influencers with a profile (the tests' directory seeder), half are fans; fan i and influencer i
// share one accepted conversation. Each account has one session, and its access tokens are signed
// here with the service's own signing key, as a login would sign them.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openBenchDatabase, source } from '../directory.mjs';

/** One address for every instance, so that a token from one is valid on all (`iss`, `aud`). */
export const PUBLIC_URL = 'http://bench.localhost';
/** Rows per statement or transaction batch. */
const BATCH = 500;

/**
 * @typedef {object} Member
 * @property {string} userId
 * @property {string} sessionId
 * @property {string} conversationId
 * @property {string} peerId
 * @property {'fan' | 'influencer'} role
 */

/**
 * @typedef {object} Population
 * @property {Member[]} members   fan i at 2i, its influencer at 2i + 1
 * @property {number} conversations
 * @property {number} seed_seconds
 * @property {(members: Member[]) => Promise<string[]>} mintTokens   fresh 15-minute access tokens
 * @property {() => Promise<void>} close
 */

/** How often the planner's statistics are refreshed on PostgreSQL (see `keepStatistics`). */
const ANALYZE_EVERY_MS = 15_000;

/**
 * Seeds `accounts` accounts (an even number) and `accounts / 2` conversations.
 * @param {import('../database.mjs').BenchDatabase} database
 * @param {number} accounts
 * @returns {Promise<Population>}
 */
export async function seedPopulation(database, accounts) {
  const started = performance.now();
  const pairs = Math.floor(accounts / 2);
  const db = await openBenchDatabase(database);
  const [{ seedDirectory }, users, chat] = await Promise.all([
    source('../test/influencer/seed.ts'),
    source('../src/accounts/users.store.ts'),
    source('../src/chat/conversations.store.ts'),
  ]);
  const now = Date.now();
  /** @type {{ profile: { id: string } }[]} */
  const influencers = await seedDirectory(db, pairs);
  const fans = Array.from({ length: pairs }, () => randomUUID());
  await inBatches(db, fans, (trx, id) => users.insertUser(trx, fanRow(id, now)));

  /** @type {Member[]} */
  const members = [];
  const conversations = influencers.map(({ profile }, i) => ({
    id: randomUUID(),
    influencer: profile.id,
    fan: /** @type {string} */ (fans[i]),
  }));
  // Accepted: the influencer has answered, so DM policy binds neither member any more.
  await inBatches(db, conversations, (trx, c) =>
    chat.insertConversation(trx, {
      id: c.id,
      influencer_id: c.influencer,
      starter_id: c.fan,
      pair_key: chat.pairKey(c.fan, c.influencer),
      accepted_at: now,
      last_seq: 0,
      version: 0,
      created_at: now,
      last_message_at: null,
      activity_at: now,
    }),
  );
  for (const c of conversations) {
    members.push(member(c.fan, c.influencer, c.id, 'fan'));
    members.push(member(c.influencer, c.fan, c.id, 'influencer'));
  }
  // Straight into the table: the service only ever inserts a session after checking a password.
  await inBatches(db, members, (trx, m) =>
    trx.insertInto('sessions').values(sessionRow(m, now)).execute(),
  );

  const tokens = await signer(database, db);
  const stopAnalyzing = await keepStatistics(db, database.kind);
  return {
    members,
    conversations: pairs,
    seed_seconds: Math.round((performance.now() - started) / 100) / 10,
    mintTokens: (list) =>
      Promise.all(list.map((m) => tokens.sign({ userId: m.userId, sessionId: m.sessionId }))),
    close: async () => {
      await stopAnalyzing();
      await db.destroy();
    },
  };
}

/**
 * What autovacuum does for a live PostgreSQL: statistics for the planner, after the seeding and
 * then every 15 s while messages pile up. Without them (this machine's PostgreSQL runs with
 * autovacuum off) the planner takes the message table for empty and GET /api/chat/unread scans
 * all of it: 15 ms a call at 35,000 messages. SQLite plans these queries without statistics.
 */
async function keepStatistics(db, kind) {
  if (kind !== 'postgres') return async () => undefined;
  const { sql } = await import('kysely');
  const analyze = () => sql`analyze`.execute(db);
  await analyze();
  let running = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(analyze).catch(() => undefined);
  }, ANALYZE_EVERY_MS);
  return async () => {
    clearInterval(timer);
    await running;
  };
}

/** @returns {Member} */
const member = (userId, peerId, conversationId, role) => ({
  userId,
  sessionId: randomUUID(),
  conversationId,
  peerId,
  role,
});

const fanRow = (id, now) => ({
  id,
  email: `fan-${id}@seed.test`,
  email_normalized: `fan-${id}@seed.test`,
  password_hash: 'seeded: no password',
  email_confirmed_at: now,
  name: `Fan ${id.slice(0, 8)}`,
  bio: null,
  avatar_url: null,
  created_at: now,
  updated_at: now,
});

const sessionRow = (m, now) => ({
  id: m.sessionId,
  user_id: m.userId,
  refresh_seed: randomBytes(32).toString('hex'),
  refresh_generation: 0,
  recent_rotations: null,
  user_agent: 'bench/realtime',
  ip: '127.0.0.1',
  created_at: now,
  last_used_at: now,
  expires_at: now + 30 * 24 * 3600_000,
});

/** Runs `write` for every item, in transactions of BATCH rows. */
async function inBatches(db, items, write) {
  for (let i = 0; i < items.length; i += BATCH) {
    await db.transaction().execute(async (trx) => {
      for (const item of items.slice(i, i + BATCH)) await write(trx, item);
    });
  }
}

/**
 * The service's access-token signer, over its signing keys and APP_SECRET: the one in the
 * environment (PostgreSQL), else the secret the service generated beside its SQLite file.
 */
async function signer(database, db) {
  const [{ createAccessTokens }, { createSecretBox }, { deriveServerKeys }] = await Promise.all([
    source('../src/security/access-tokens.ts'),
    source('../src/security/secret-box.ts'),
    source('../src/security/server-keys.ts'),
  ]);
  const secret =
    database.env.APP_SECRET ?? readFileSync(join(database.workDir, 'app-secret'), 'utf8').trim();
  const box = createSecretBox(deriveServerKeys(secret).secretBox);
  return createAccessTokens({ db, box, issuer: PUBLIC_URL, clock: Date.now });
}
