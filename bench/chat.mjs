/* global fetch */
// The chat scenarios (issue 10): accounts, sessions, influencer profiles, conversations and
// messages seeded straight into the service's database by the tests' own seeder
// (test/chat/seed.ts, loaded through tsx: rows built and written by the service's store
// functions), access tokens signed with the service's own signing key, then three loads: sends
// rotating over thousands of (member, conversation) pairs, the newest page of a 10,000-message
// conversation, and the conversation list of users with 500 conversations each.
import { performance } from 'node:perf_hooks';
import { analyze, openBenchDatabase, source } from './directory.mjs';
import { storedHash } from './hashing.mjs';
import { mapLimit, runTag } from './seed.mjs';

export const CHAT_CONNECTIONS = 10;
export const HISTORY_MESSAGES = 10_000;
export const LIST_USERS = 4;
export const LIST_CONVERSATIONS = 500;
/** The figure: sends go over at least this many conversations. */
const MIN_CONVERSATIONS = 1_000;

/**
 * The limits stay on (API.md: 10 sends per 10 s per user and conversation, 60 a minute per user),
 * so the rotation must spread sends thinly enough that none is refused at any rate this machine
 * can reach: SEND_CEILING sends/s (GET /api/profile, the cheapest authenticated route, does
 * ~9,000 req/s here), with LIMIT_HEADROOM to spare for the rotation's unevenness.
 */
export const SEND_CEILING = 8_000;
const LIMIT_HEADROOM = 1.25;
/** verified-token-cache.ts keeps this many verified tokens; more senders would verify ES256 each time. */
const VERIFIED_TOKEN_CACHE = 15_000;

const SAYINGS = [
  'hey, quick question about the collab',
  'Loved the stream last night!',
  'Sure, send me the details 👍',
  'Merci pour la réponse rapide',
  'ok',
  'Can we move it to Thursday?',
  'Das klingt gut, bis morgen',
  'haha yes exactly',
];

/**
 * How many senders and conversations the send scenario needs for `durationSeconds`:
 * - per pair (member, conversation), 10 sends per 10 s: a rotation over P pairs at R sends/s
 *   comes back to a pair every P / R s, so P ≥ R × headroom keeps it at 8 per 10 s;
 * - per user, 60 a minute: with U senders each sends R × T / U within a run of T s (T ≤ 60),
 *   so U ≥ R × T / 60 × headroom keeps each under 48.
 * @param {number} durationSeconds
 */
export function chatPlan(durationSeconds) {
  const pairs = Math.ceil(SEND_CEILING * LIMIT_HEADROOM);
  const windowSeconds = Math.min(durationSeconds + 1, 60); // +1: the check before the load
  const users = Math.ceil(((SEND_CEILING * windowSeconds) / 60) * LIMIT_HEADROOM);
  const senders = Math.max(LIST_CONVERSATIONS, Math.ceil(users / 2));
  const conversations = Math.max(MIN_CONVERSATIONS, Math.ceil(pairs / 2));
  return {
    senders,
    conversationsPerSender: Math.ceil(conversations / senders),
    historyMessages: HISTORY_MESSAGES,
    listUsers: LIST_USERS,
    conversationsPerListUser: LIST_CONVERSATIONS,
  };
}

/**
 * @typedef {object} Chat
 * @property {string} kind                  sqlite or postgres: which send target applies
 * @property {ReturnType<typeof chatPlan>} plan
 * @property {{ users: number, conversations: number, messages: number }} counts
 * @property {number} sending_pairs         (member, conversation) pairs the sends rotate over
 * @property {number} senders
 * @property {number} seed_seconds
 * @property {Record<string, string>} plans  each query's plan, from the database itself
 * @property {{ sides: { path: string, token: string }[], history: { path: string, tokens: string[] }, lists: string[] }} requests
 */

/**
 * Seeds the chat into the service's database, signs tokens for every seeded session, checks
 * each scenario's request once, and collects the plans of the queries they run.
 * @param {import('./database.mjs').BenchDatabase} database
 * @param {{ url: string }} service
 * @param {{ durationSeconds: number }} options
 * @returns {Promise<Chat>}
 */
export async function prepareChat(database, service, { durationSeconds }) {
  const db = await openBenchDatabase(database);
  try {
    const started = performance.now();
    const { seedChat, signAccessTokens } = await source('../test/chat/seed.ts');
    const plan = chatPlan(durationSeconds);
    const seeded = await seedChat(db, plan, await storedHash());
    await analyze(db, database.kind);
    const seedSeconds = Math.round((performance.now() - started) / 100) / 10;

    const members = [
      ...seeded.sides.map((side) => side.member),
      ...seeded.history.members,
      ...seeded.listUsers,
    ];
    const tokens = await signAccessTokens(db, await serviceKeys(database, service), members);
    const tokenOf = (member) => tokens.get(member.sessionId);
    const requests = {
      sides: seeded.sides.map((side) => ({
        path: `/api/chat/conversations/${side.conversationId}/messages`,
        token: tokenOf(side.member),
      })),
      history: {
        path: `/api/chat/conversations/${seeded.history.conversationId}/messages`,
        tokens: seeded.history.members.map(tokenOf),
      },
      lists: seeded.listUsers.map(tokenOf),
    };
    await checkRequests(service, requests);
    return {
      kind: database.kind,
      plan,
      counts: seeded.counts,
      sending_pairs: seeded.sides.length,
      senders: new Set(seeded.sides.map((side) => side.member.userId)).size,
      seed_seconds: seedSeconds,
      plans: await chatPlans(database, seeded),
      requests,
    };
  } finally {
    await db.destroy();
  }
}

/** The service's APP_SECRET (as it resolves it: on SQLite, the file beside the database) and issuer. */
async function serviceKeys(database, service) {
  const { loadConfig } = await source('../src/config.ts');
  const { resolveAppSecret } = await source('../src/security/server-keys.ts');
  const config = loadConfig({ DATABASE_URL: database.url, ...database.env });
  return { appSecret: resolveAppSecret(config), issuer: service.url };
}

/** @param {{ url: string }} service */
async function call(service, path, token, body) {
  const response = await fetch(service.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'x-forwarded-for': '10.201.0.2',
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/**
 * Each scenario's request answers as the scenario expects, before it is measured; and every
 * token has been verified once, as a live user's token has (the service caches a verification
 * for the token's 15 minutes: a cold start would add one ES256 check per sender to the sends).
 */
async function checkRequests(service, requests) {
  const fail = (what, answer) => {
    throw new Error(`chat: ${what} answered ${answer.status} ${JSON.stringify(answer.body)}`);
  };
  const side = requests.sides[0];
  const sent = await call(service, side.path, side.token, {
    client_message_id: `check-${runTag()}`,
    text: SAYINGS[0],
  });
  if (sent.status !== 201) fail('a send', sent);
  for (const token of requests.history.tokens) {
    const page = await call(service, requests.history.path, token);
    if (page.status !== 200 || page.body.messages.length !== 50) fail('the history page', page);
  }
  for (const token of requests.lists) {
    const list = await call(service, '/api/chat/conversations', token);
    if (list.status !== 200 || list.body.next_cursor === null) fail('the conversation list', list);
  }
  const senders = [...new Set(requests.sides.map((s) => s.token))];
  await mapLimit(senders, 8, async (token) => {
    const profile = await call(service, '/api/profile', token);
    if (profile.status !== 200) fail('a sender’s profile', profile);
  });
}

/**
 * The plan of every query the three scenarios run (but the session lookup every authenticated
 * route shares), recorded as the service's own chat functions send them: each step runs in a
 * transaction that is rolled back, on a connection whose query log keeps the statements. SQLite:
 * EXPLAIN QUERY PLAN; PostgreSQL: EXPLAIN ANALYZE (writes included, rolled back too).
 */
async function chatPlans(database, seeded) {
  /** @type {{ sql: string, parameters: readonly unknown[] }[] | undefined} */
  let recording;
  const log = (event) => {
    const control = /^\s*(begin|commit|rollback|savepoint|release)\b/i.test(event.query.sql);
    if (event.level === 'query' && !control) recording?.push(event.query);
  };
  const db = await openBenchDatabase(database, { log });
  try {
    const steps = await chatSteps(db, seeded);
    /** @type {Record<string, string>} */
    const plans = {};
    for (const [step, run] of Object.entries(steps)) {
      recording = [];
      await rolledBack(db, run);
      const queries = recording;
      recording = undefined;
      for (const [i, query] of queries.entries()) {
        const name = queries.length > 1 ? `${step} (${i + 1}/${queries.length})` : step;
        plans[`${name}: ${describeQuery(query.sql)}`] = await explainRecorded(
          db,
          database.kind,
          query,
        );
      }
    }
    return plans;
  } finally {
    await db.destroy();
  }
}

/** What each scenario's request does, step by step, through the service's chat functions. */
async function chatSteps(db, seeded) {
  const { findMembership } = await source('../src/chat/membership.ts');
  const { findMessageByClientKey } = await source('../src/chat/messages.store.ts');
  const { sendFactsOf } = await source('../src/chat/send-rules.ts');
  const { storeSentMessage } = await source('../src/chat/send.store.ts');
  const { listMessages } = await source('../src/chat/messages.ts');
  const { listConversations } = await source('../src/chat/conversations.ts');
  const side = seeded.sides[0];
  const [reader] = seeded.history.members;
  const listUser = seeded.listUsers[1]; // a fan: DM policy is looked up for pending requests
  const ctx = (trx) => ({ db: trx, clock: Date.now });
  // Outside the recorded transactions: SQLite's one connection would wait for itself.
  const sending = await findMembership(db, side.member.userId, side.conversationId);
  const reading = await findMembership(db, reader.userId, seeded.history.conversationId);
  /** @type {Record<string, (trx: any) => Promise<unknown>>} */
  return {
    'send: membership': (trx) => findMembership(trx, side.member.userId, side.conversationId),
    'send: replay (only once the unique index or a refusal stops a send)': (trx) =>
      findMessageByClientKey(trx, side.member.userId, 'plan-key'),
    'send: blocks and DM policy': (trx) => sendFactsOf(ctx(trx), sending),
    'send: number, store, mark read': (trx) =>
      storeSentMessage(trx, {
        id: '00000000-0000-4000-8000-000000000001',
        conversation_id: side.conversationId,
        sender_id: side.member.userId,
        client_message_id: 'plan-key',
        text_digest: 'plan',
        text: 'plan',
        created_at: Date.now(),
        edited_at: null,
        deleted_at: null,
      }),
    'history: newest page': (trx) => listMessages(ctx(trx), reading, { limit: 50 }),
    'conversations: first page': (trx) =>
      listConversations(ctx(trx), listUser.userId, {
        unreadOnly: false,
        page: { limit: 20, after: undefined },
      }),
  };
}

const ROLLBACK = Symbol('rollback');

/** Runs `work` in a transaction that is rolled back. */
async function rolledBack(db, work) {
  try {
    await db.transaction().execute(async (trx) => {
      await work(trx);
      throw ROLLBACK;
    });
  } catch (error) {
    if (error !== ROLLBACK) throw error;
  }
}

/** Which tables a statement reads or writes, for the plan's title. */
function describeQuery(text) {
  const verb = /^\s*(with|select|insert|update|delete)/i.exec(text)?.[1]?.toLowerCase() ?? 'query';
  const tables = [...text.matchAll(/(?:from|join|into|update)\s+"(\w+)"/gi)].map((m) => m[1]);
  return `${verb} ${[...new Set(tables)].join(', ')}`;
}

/** The plan of a recorded query; on PostgreSQL it runs (ANALYZE) in a rolled-back transaction. */
async function explainRecorded(db, kind, query) {
  const prefix = kind === 'postgres' ? 'explain (analyze, costs off) ' : 'explain query plan ';
  let lines = [];
  await rolledBack(db, async (trx) => {
    const { rows } = await trx.executeQuery({ ...query, sql: prefix + query.sql });
    lines = rows.map((row) => String(row.detail ?? row['QUERY PLAN']));
  });
  // SQLite gives no plan for an INSERT of values: it only appends the row and its index entries.
  return lines.length > 0 ? lines.join('\n') : '(no plan: a plain INSERT of one row)';
}

/** Sends rotate over every (member, conversation) pair; each a new client_message_id. */
async function sendBuilder(/** @type {any} */ { chat }) {
  /** @type {Chat['requests']['sides']} */
  const sides = chat.requests.sides;
  const tag = runTag();
  let next = 0;
  return {
    request: {
      method: /** @type {const} */ ('POST'),
      path: sides[0].path,
      headers: {},
      setup(req) {
        const n = next++;
        const side = sides[n % sides.length];
        req.path = side.path;
        req.headers.authorization = `Bearer ${side.token}`;
        req.body = JSON.stringify({
          client_message_id: `${tag}-${n.toString(36)}`,
          text: SAYINGS[n % SAYINGS.length],
        });
      },
    },
    extra: () => ({ sends_started: next }),
  };
}

/** The same request path, its bearer rotating over `tokens`. */
function rotatingBearer(path, tokens) {
  let next = 0;
  return {
    request: {
      method: /** @type {const} */ ('GET'),
      path,
      headers: {},
      setup(req) {
        req.headers.authorization = `Bearer ${tokens[next++ % tokens.length]}`;
      },
    },
  };
}

export const CHAT_BUILDERS = {
  send: sendBuilder,
  history: async (/** @type {any} */ { chat }) =>
    rotatingBearer(chat.requests.history.path, chat.requests.history.tokens),
  conversations: async (/** @type {any} */ { chat }) =>
    rotatingBearer('/api/chat/conversations', chat.requests.lists),
};

/**
 * The chat scenarios, in the order they run; `chatprofile` is GET /api/profile on as many
 * connections, run once before them and again in slices between the send scenario's own slices:
 * those slices are what the send rate is compared to (bench/suite.mjs).
 */
export const CHAT_SCENARIOS = [
  {
    key: 'chatprofile',
    name: 'GET /api/profile (chat reference)',
    expect: { status: 200 },
    note: 'measured right before the chat scenarios, on the seeded chat; sends are judged against GET /api/profile measured again in slices between their own',
  },
  {
    key: 'send',
    name: 'chat: send a message',
    expect: { status: 201 },
    note: 'POST /api/chat/conversations/{id}/messages, rotating over every (member, conversation) pair; a new client_message_id each',
  },
  {
    key: 'history',
    name: 'chat: newest page of 10,000 messages',
    expect: { status: 200 },
    note: 'GET /api/chat/conversations/{id}/messages (50 messages), both members in turn',
  },
  {
    key: 'conversations',
    name: 'chat: conversation list (500 conversations)',
    expect: { status: 200 },
    note: `GET /api/chat/conversations (first page of 20), ${LIST_USERS} users with ${LIST_CONVERSATIONS} conversations each in turn`,
  },
].map((s) => ({ ...s, connections: CHAT_CONNECTIONS }));

export const CHAT_KEYS = CHAT_SCENARIOS.map((s) => s.key).filter((k) => k !== 'chatprofile');

/** Notes for the report: how the chat was seeded and why the send rotation is that wide. */
export function chatNotes(chat) {
  const { plan, counts } = chat;
  const notes = [
    `Chat: ${counts.users} accounts with sessions, ${counts.conversations} conversations and ` +
      `${counts.messages} messages seeded straight into the database by test/chat/seed.ts and ` +
      `ANALYZEd in ${chat.seed_seconds} s; access tokens signed with the service's signing key.`,
    `Chat sends rotate over ${chat.sending_pairs} (member, conversation) pairs of ` +
      `${chat.senders} senders (${plan.conversationsPerSender} conversations each): with the ` +
      `limits on (10 per 10 s per pair, 60 a minute per user), that keeps every pair at ≤ 8 per ` +
      `10 s and every sender at ≤ 48 in the run up to ${SEND_CEILING} sends/s. 1,000 ` +
      'conversations (2,000 pairs) would cap sends at 2,000/s.',
    ...CHAT_SCENARIOS.map((s) => `${s.name}: ${s.note}`),
  ];
  if (chat.senders > VERIFIED_TOKEN_CACHE)
    notes.push(
      `Chat: ${chat.senders} senders exceed the service's ${VERIFIED_TOKEN_CACHE} cached token ` +
        'verifications: sends verify their token (ES256) each time; use a shorter --duration.',
    );
  return notes;
}
