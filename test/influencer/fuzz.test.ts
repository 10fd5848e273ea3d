import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, TestApp, type Account } from '../helpers/test-app.js';
import { confirmedAccount, creator, type Creator } from './support.js';

/**
 * Property: whatever values reach the Influencer group's bodies and query strings (from a
 * confirmed account, so the service's own rules are reached, not only the schemas), the answer
 * is never a 5xx; a refusal is a 4xx with `message` and `error`, and changes nothing.
 */

const NUM_RUNS = 120;

const nasty = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({
    unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
    maxLength: 5,
  }),
  fc.string({
    unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
    maxLength: 3,
  }),
  fc.constantFrom(
    '',
    ' ',
    'me',
    'ada_l',
    'Ada_L',
    'https://x.test/a.png',
    'https://u:p@x.test/',
    'http://x.test/',
    'javascript:alert(1)',
    'music',
    'everyone',
    '%',
    '_',
    '\\',
    '"',
    "'; drop table follows; --",
    'é'.repeat(60),
    'x'.repeat(3000),
  ),
);
const anything: fc.Arbitrary<unknown> = fc.oneof(
  nasty,
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(nasty, { maxLength: 6 }),
  fc.array(fc.record({ label: nasty, url: nasty }, { requiredKeys: [] }), { maxLength: 6 }),
  fc.dictionary(fc.string({ maxLength: 5 }), nasty, { maxKeys: 3 }),
);
const fieldValue = (valid: fc.Arbitrary<unknown>) =>
  fc.oneof({ arbitrary: valid, weight: 3 }, { arbitrary: anything, weight: 2 });

const profileBody = fc.record(
  {
    handle: fieldValue(fc.stringMatching(/^[A-Za-z0-9_]{3,30}$/)),
    display_name: fieldValue(fc.string({ minLength: 1, maxLength: 50 })),
    categories: fieldValue(
      fc.subarray(['art', 'music', 'tech', 'food'], { minLength: 1, maxLength: 3 }),
    ),
    bio: fieldValue(fc.option(fc.string({ maxLength: 500 }))),
    avatar_url: fieldValue(fc.option(fc.webUrl({ validSchemes: ['https'] }))),
    links: fieldValue(
      fc.array(
        fc.record({
          label: fc.string({ minLength: 1, maxLength: 30 }),
          url: fc.webUrl({ validSchemes: ['https'] }),
        }),
        {
          maxLength: 5,
        },
      ),
    ),
    dm_policy: fieldValue(fc.constantFrom('everyone', 'followers', 'nobody')),
  },
  { requiredKeys: [] },
);

/** A lone surrogate cannot be URI-encoded: it is sent as the invalid UTF-8 bytes it would be. */
function pathSegment(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return '%ED%A0%80';
  }
}

function expectWellFormed(response: LightMyRequestResponse, what: string): void {
  expect(response.statusCode, what).toBeLessThan(500);
  expect(response.headers['content-type'], what).toMatch(/^application\/json/);
  const body = response.json();
  if (response.statusCode >= 400) {
    expect(typeof body.message, what).toBe('string');
    expect(typeof body.error, what).toBe('string');
  }
}

describe.each(backends)('fuzzing the Influencer group ($name)', (backend) => {
  let t: TestApp;
  let someone: Creator;
  let caller: Account;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    someone = await creator(t, { handle: 'ada_l' });
    caller = await confirmedAccount(t);
  });
  afterAll(() => t.close());

  const mine = async () =>
    (await t.call('GET', '/api/influencers/me', { token: caller.accessToken })).body;

  it('POST /api/influencers: never 5xx; a refusal creates nothing', async () => {
    await fc.assert(
      fc.asyncProperty(profileBody, async (body) => {
        const before = await mine();
        const response = await t.post('/api/influencers', body, { token: caller.accessToken });
        const what = `${JSON.stringify(body).slice(0, 300)} → ${response.body.slice(0, 300)}`;
        expectWellFormed(response, what);
        if (response.statusCode !== 201) expect(await mine(), what).toBe(before);
        else await t.call('DELETE', '/api/influencers/me', { token: caller.accessToken });
      }),
      { seed: 5, numRuns: NUM_RUNS },
    );
  });

  it('PATCH /api/influencers/me: never 5xx; a refusal changes nothing', async () => {
    await t.post(
      '/api/influencers',
      { handle: 'fuzzed_one', display_name: 'Fuzzed', categories: ['art'] },
      { token: caller.accessToken },
    );
    await fc.assert(
      fc.asyncProperty(profileBody, async (body) => {
        const before = await mine();
        const response = await t.call('PATCH', '/api/influencers/me', {
          token: caller.accessToken,
          body,
        });
        const what = `${JSON.stringify(body).slice(0, 300)} → ${response.body.slice(0, 300)}`;
        expectWellFormed(response, what);
        if (response.statusCode !== 200) expect(await mine(), what).toBe(before);
      }),
      { seed: 6, numRuns: NUM_RUNS },
    );
  });

  it('GET /api/influencers and /{ref}: never 5xx, whatever the query or path', async () => {
    const param = fc.oneof(
      nasty,
      fc.constantFrom('1', '20', '100', 'popular', 'name', 'art', 'ab'),
    );
    const query = fc.dictionary(
      fc.constantFrom('q', 'category', 'sort', 'limit', 'cursor', 'other'),
      fc.oneof(param, fc.array(param, { minLength: 2, maxLength: 2 })),
      { maxKeys: 5 },
    );
    const ref = fc.oneof(
      nasty,
      fc.uuid().map(String),
      fc.constantFrom(someone.id, 'ADA_L', 'me', 'following'),
    );
    await fc.assert(
      fc.asyncProperty(query, ref, fc.boolean(), async (q, rawRef, signedIn) => {
        const search = new URLSearchParams();
        for (const [key, value] of Object.entries(q)) {
          for (const v of [value].flat()) search.append(key, v);
        }
        const token = signedIn ? caller.accessToken : undefined;
        const options = { token, ip: randomIp() };
        for (const url of [
          `/api/influencers?${search}`,
          `/api/influencers/following?${search}`,
          `/api/influencers/me/followers?${search}`,
          `/api/influencers/${pathSegment(rawRef)}`,
        ]) {
          const response = await t.call('GET', url, options);
          expectWellFormed(response, `${url} → ${response.body.slice(0, 300)}`);
        }
      }),
      { seed: 7, numRuns: NUM_RUNS },
    );
  });
});
