// The measured scenarios: what each one sends, which answer it expects, and how it keeps the
// service's per-account rules from turning the load into errors.
import { CHAT_BUILDERS, CHAT_SCENARIOS } from './chat.mjs';
import { DIRECTORY_BUILDERS, DIRECTORY_SCENARIOS } from './directory.mjs';
import { PASSWORDS, seedSessions } from './seed.mjs';

/** Concurrency of the login scenario, and so of the raw argon2id measurement it is compared to. */
export const LOGIN_CONNECTIONS = 8;

/**
 * Items (sessions, users) lent to one request at a time, so every request presents the item's
 * current state (the latest refresh token, the current password). If more requests are in flight
 * than there are items, an item is lent twice and `reused` counts it (it should stay 0).
 * @template T
 * @param {T[]} items
 */
export function lendingPool(items) {
  const free = [...items];
  const inFlight = new Map(items.map((item) => [item, 0]));
  let next = 0;
  const pool = {
    reused: 0,
    /** @returns {T} */
    take() {
      let item = free.shift();
      if (item === undefined) {
        pool.reused += 1;
        item = items[next++ % items.length];
      }
      inFlight.set(item, (inFlight.get(item) ?? 0) + 1);
      return /** @type {T} */ (item);
    },
    /** @param {T} item */
    give(item) {
      const count = (inFlight.get(item) ?? 1) - 1;
      inFlight.set(item, count);
      if (count === 0) free.push(item);
    },
  };
  return pool;
}

/** Round-robin over prepared request bodies. @param {string[]} bodies */
function rotating(bodies) {
  let next = 0;
  return () => bodies[next++ % bodies.length];
}

/**
 * @typedef {object} ScenarioContext
 * @property {string} url
 * @property {import('./seed.mjs').Seed} seed
 * @property {import('./database.mjs').BenchDatabase} database
 * @property {import('./directory.mjs').Directory} [directory]   once the directory is seeded
 * @property {import('./chat.mjs').Chat} [chat]   once the chat is seeded
 */

/**
 * @typedef {object} ScenarioSpec
 * @property {string} key          its builder in BUILDERS
 * @property {string} name
 * @property {number} connections
 * @property {import('./load.mjs').Expectation} expect
 * @property {string} [note]
 */

/**
 * @typedef {object} Built
 * @property {import('./load.mjs').RequestSpec} request
 * @property {() => Record<string, unknown>} [extra]   facts for the report (pool re-use)
 */

/** @type {Record<string, (context: ScenarioContext, connections: number) => Promise<Built>>} */
export const BUILDERS = {
  async bare() {
    return { request: { method: 'GET', path: '/healthz' } };
  },

  async profile({ seed }) {
    return {
      request: {
        method: 'GET',
        path: '/api/profile',
        headers: { authorization: `Bearer ${seed.profileToken}` },
      },
    };
  },

  /** The same, as the directory scenarios' reference (on as many connections as they use). */
  async profile10(context, connections) {
    return BUILDERS.profile(context, connections);
  },

  /** And as the chat scenarios' reference, measured on the seeded chat. */
  async chatprofile(context, connections) {
    return BUILDERS.profile(context, connections);
  },

  /** Correct passwords only: a failure would count towards the per-account lockout. */
  async login({ seed }) {
    const body = rotating(
      seed.loginUsers.map((user) => JSON.stringify({ email: user.email, password: PASSWORDS[0] })),
    );
    return {
      request: {
        method: 'POST',
        path: '/api/login',
        setup(req) {
          req.body = body();
        },
      },
    };
  },

  /**
   * Each request lends a session and presents its latest refresh token; the answer's token
   * replaces it. Three sessions per connection, so no session is ever in flight twice.
   */
  async refresh({ url, seed }, connections) {
    const tokens = await seedSessions(url, seed, connections * 3);
    const pool = lendingPool(tokens.map((token) => ({ token })));
    return {
      request: {
        method: 'POST',
        path: '/api/refresh-token',
        setup(req, context) {
          const session = pool.take();
          context.session = session;
          req.body = JSON.stringify({ refresh_token: session.token });
        },
        onResponse(status, body, context) {
          const session = /** @type {{ token: string }} */ (context.session);
          if (status === 200) session.token = JSON.parse(body).refresh_token;
          pool.give(session);
        },
      },
      extra: () => ({ sessions: tokens.length, sessions_lent_twice: pool.reused }),
    };
  },

  /** No bearer; a wrong code. After 5 wrong tries the code is burnt: still 400 invalid_code. */
  async confirm({ seed }) {
    const body = rotating(
      seed.loginUsers.map((user) => JSON.stringify({ email: user.email, code: '000000' })),
    );
    return {
      request: {
        method: 'POST',
        path: '/api/confirm-email',
        setup(req) {
          req.body = body();
        },
      },
    };
  },

  /**
   * Each request lends a user of its own and changes its password to the other one of two, so
   * the current password is always right (5 wrong ones would lock the account for 15 minutes).
   */
  async change({ seed }, connections) {
    if (seed.changeUsers.length < connections) {
      throw new Error(
        `change-password needs ${connections} users, seeded ${seed.changeUsers.length}`,
      );
    }
    const pool = lendingPool(seed.changeUsers);
    return {
      request: {
        method: 'POST',
        path: '/api/change-password',
        setup(req, context) {
          const user = pool.take();
          context.user = user;
          req.headers.authorization = `Bearer ${user.token}`;
          req.body = JSON.stringify({ password: user.password, new_password: user.next });
        },
        onResponse(status, _body, context) {
          const user = /** @type {import('./seed.mjs').Seed['changeUsers'][number]} */ (
            context.user
          );
          if (status === 200) [user.password, user.next] = [user.next, user.password];
          pool.give(user);
        },
      },
      extra: () => ({ users: seed.changeUsers.length, users_lent_twice: pool.reused }),
    };
  },

  ...DIRECTORY_BUILDERS,
  ...CHAT_BUILDERS,

  /** A new address every request. */
  async register({ seed }) {
    let next = 0;
    return {
      request: {
        method: 'POST',
        path: '/api/register',
        setup(req) {
          const email = `bench-${seed.tag}-new-${next++}@example.com`;
          req.body = JSON.stringify({ email, password: PASSWORDS[0] });
        },
      },
    };
  },
};

/** The scenarios, in the order they run. @type {ScenarioSpec[]} */
export const SCENARIOS = [
  {
    key: 'bare',
    name: 'GET /healthz (bare route)',
    connections: 16,
    expect: { status: 200 },
    note: 'the framework ceiling: /healthz does no I/O',
  },
  { key: 'profile', name: 'GET /api/profile', connections: 16, expect: { status: 200 } },
  {
    key: 'login',
    name: 'POST /api/login',
    connections: LOGIN_CONNECTIONS,
    expect: { status: 200 },
    note: 'one argon2id verify per request',
  },
  {
    key: 'refresh',
    name: 'POST /api/refresh-token',
    connections: 16,
    expect: { status: 200 },
    note: 'each request presents its session’s latest token',
  },
  {
    key: 'confirm',
    name: 'POST /api/confirm-email (wrong code)',
    connections: 16,
    expect: { status: 400, error: 'invalid_code' },
    note: 'expected answer 400 invalid_code (codes burn after 5 wrong tries)',
  },
  {
    key: 'change',
    name: 'POST /api/change-password',
    connections: 8,
    expect: { status: 200 },
    note: 'one argon2id verify and one hash per request',
  },
  {
    key: 'register',
    name: 'POST /api/register',
    connections: 8,
    expect: { status: 201 },
    note: 'one argon2id hash per request; a new address each',
  },
  ...DIRECTORY_SCENARIOS,
  ...CHAT_SCENARIOS,
];

/** Users seeded for change-password: one per connection and half as many spare. */
export const CHANGE_USERS = Math.ceil(
  (SCENARIOS.find((s) => s.key === 'change')?.connections ?? 8) * 1.5,
);
