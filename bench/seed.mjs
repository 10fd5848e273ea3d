/* global fetch */
// Seeds the accounts and sessions the scenarios need, through the service's own API.
import { randomBytes } from 'node:crypto';

/** Two strong passwords; change-password alternates between them. */
export const PASSWORDS = ['bench Alpha 7391 passphrase', 'bench Bravo 2846 passphrase'];

/** Seeding traffic comes from its own addresses (10.200.0.0/16), away from the loads' pool. */
let seedIp = 0;
const nextSeedIp = () => {
  const i = seedIp++ % 65536;
  return `10.200.${i >> 8}.${i & 255}`;
};

/**
 * @param {string} url
 * @param {string} path
 * @param {unknown} body
 * @param {number} expectedStatus
 * @returns {Promise<Record<string, any>>}
 */
export async function post(url, path, body, expectedStatus) {
  const response = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': nextSeedIp() },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  if (response.status !== expectedStatus) {
    throw new Error(`seeding: ${path} answered ${response.status} ${JSON.stringify(json)}`);
  }
  return json;
}

/**
 * Runs `work` over `items`, at most `limit` at a time.
 * @template T, R
 * @param {T[]} items
 * @param {number} limit
 * @param {(item: T, index: number) => Promise<R>} work
 * @returns {Promise<R[]>}
 */
export async function mapLimit(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index], index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** A tag that keeps this run's e-mail addresses apart from any other run's. */
export const runTag = () => `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;

/**
 * @typedef {object} Seed
 * @property {string} tag
 * @property {{ email: string }[]} loginUsers      password PASSWORDS[0]; used by login, profile,
 *   refresh-token and confirm-email (all unconfirmed)
 * @property {string} profileToken                 an access token of a login user
 * @property {{ email: string, token: string, password: string, next: string }[]} changeUsers
 *   one per change-password slot; nobody else signs in as them
 */

/**
 * @param {string} url
 * @param {{ loginUsers: number, changeUsers: number }} counts
 * @returns {Promise<Seed>}
 */
export async function seedAccounts(url, counts) {
  const tag = runTag();
  const register = async (email) =>
    post(url, '/api/register', { email, password: PASSWORDS[0] }, 201);
  const loginEmails = Array.from(
    { length: counts.loginUsers },
    (_, i) => `bench-${tag}-user-${i}@example.com`,
  );
  const changeEmails = Array.from(
    { length: counts.changeUsers },
    (_, i) => `bench-${tag}-change-${i}@example.com`,
  );
  const loginReplies = await mapLimit(loginEmails, 4, register);
  const changeReplies = await mapLimit(changeEmails, 4, register);
  return {
    tag,
    loginUsers: loginEmails.map((email) => ({ email })),
    profileToken: loginReplies[0].access_token,
    changeUsers: changeReplies.map((reply, i) => ({
      email: changeEmails[i],
      token: reply.access_token,
      password: PASSWORDS[0],
      next: PASSWORDS[1],
    })),
  };
}

/**
 * Signs in `count` times (round-robin over the login users) and returns the refresh tokens: one
 * session each.
 * @param {string} url
 * @param {Seed} seed
 * @param {number} count
 * @returns {Promise<string[]>}
 */
export async function seedSessions(url, seed, count) {
  const indexes = Array.from({ length: count }, (_, i) => i);
  const replies = await mapLimit(indexes, 4, (i) =>
    post(
      url,
      '/api/login',
      { email: seed.loginUsers[i % seed.loginUsers.length].email, password: PASSWORDS[0] },
      200,
    ),
  );
  return replies.map((reply) => reply.refresh_token);
}
