import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { apiRouteTable } from '../helpers/route-table.js';
import { randomIp, STRONG_PASSWORD, TestApp, type Account } from '../helpers/test-app.js';
import type { RouteEntry } from '../../src/http/route-table.js';
import { ChatClient, openConversation } from '../chat/fixture.js';
import { creator as createInfluencer } from '../influencer/support.js';

/**
 * Property: whatever arrives at a POST/PATCH/DELETE endpoint — any JSON, the endpoint's own field
 * names with any values, other media types, raw bytes, with or without a valid bearer token — the
 * answer is never a 5xx, and is a JSON object; an error carries string `message` and `error`.
 */

const NUM_RUNS = 150;

/** Every /api route that changes something, from the app's own route table. */
const ENDPOINTS = (await apiRouteTable()).filter((r) =>
  ['POST', 'PUT', 'PATCH', 'DELETE'].includes(r.method),
);

const charCodes = (min: number, max: number) =>
  fc.integer({ min, max }).map((c) => String.fromCharCode(c));

/** A control character, NUL often (PostgreSQL text cannot hold it). */
const controlChar = fc.oneof(fc.constant('\u0000'), charCodes(1, 0x1f), fc.constant('\u007f'));

/** `text` with a control character inserted somewhere. */
const withControlChar = (text: fc.Arbitrary<string>) =>
  fc
    .tuple(text, controlChar, fc.nat())
    .map(([s, c, at]) => s.slice(0, at % (s.length + 1)) + c + s.slice(at % (s.length + 1)));

/** Strings that tend to break things: unicode, control characters, lone surrogates, NUL, huge. */
const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: controlChar, maxLength: 10 }),
  fc.string({ unit: charCodes(0xd800, 0xdfff), maxLength: 4 }),
  fc
    .tuple(
      fc.string({ unit: 'binary', minLength: 1, maxLength: 3 }),
      fc.integer({ min: 100, max: 7_000 }),
    )
    .map(([s, n]) => s.repeat(n).slice(0, 20_000)),
  fc.emailAddress(),
  // A valid-looking address with a control character (NUL included) somewhere in it.
  withControlChar(fc.emailAddress()),
  fc.constantFrom(
    '',
    ' ',
    '000000',
    '123456',
    'https://cdn.example.test/a.png',
    'https://a\u0000b.test/',
    'javascript:alert(1)',
    "' OR 1=1 --",
    '__proto__',
    'null',
    STRONG_PASSWORD, // the fuzzed account's own password: reaches the success paths
  ),
);

const anyValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 3 }),
  ),
})).value;

/** A named field: mostly strings (the type every field but `all` expects), sometimes anything. */
const fieldValue = fc.oneof(
  { arbitrary: nastyString, weight: 4 },
  { arbitrary: anyValue, weight: 1 },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json;',
  'application/vnd.api+json',
  'text/plain',
  'text/plain; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/octet-stream',
  'application/xml',
  '*/*',
  'json',
];
const contentType = fc.oneof(
  fc.constantFrom(...CONTENT_TYPES),
  fc.stringMatching(/^[a-z]{1,8}\/[a-z0-9.+-]{1,12}(; ?[a-z]{1,8}=[a-z0-9-]{1,8})?$/),
);

interface RequestShape {
  readonly payload: string | Buffer | undefined;
  readonly contentType: string | undefined;
}

function bodyFor(endpoint: RouteEntry): fc.Arbitrary<RequestShape> {
  const model = Object.fromEntries((endpoint.bodyFields ?? []).map((f) => [f, fieldValue]));
  const fields = fc
    .tuple(
      // Mostly every field present (so requests get past validation), sometimes some missing.
      fc.oneof(
        { arbitrary: fc.record(model), weight: 3 },
        { arbitrary: fc.record(model, { requiredKeys: [] }), weight: 1 },
      ),
      fc.dictionary(fc.string({ maxLength: 6 }), anyValue, { maxKeys: 2 }),
    )
    .map(([known, extra]) => ({ ...extra, ...known }));
  const json = (value: fc.Arbitrary<unknown>) =>
    fc.record({
      payload: value.map((v) => JSON.stringify(v) ?? 'null'),
      contentType: fc.constantFrom('application/json', 'application/json; charset=utf-8'),
    });
  return fc.oneof(
    { arbitrary: json(fields), weight: 6 },
    { arbitrary: json(fc.jsonValue()), weight: 2 },
    { arbitrary: json(anyValue), weight: 1 },
    {
      arbitrary: fc.record({
        payload: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
        contentType: fc.option(contentType, { nil: undefined }),
      }),
      weight: 2,
    },
    {
      arbitrary: fc.record({
        payload: fc.oneof(
          fields.map((v) => JSON.stringify(v)),
          nastyString,
        ),
        contentType: fc.option(contentType, { nil: undefined }),
      }),
      weight: 2,
    },
    { arbitrary: fc.record({ payload: fc.constant(undefined), contentType }), weight: 1 },
  );
}

type Auth = { kind: 'none' } | { kind: 'valid' } | { kind: 'raw'; header: string };
const auth: fc.Arbitrary<Auth> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'none' as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: 'valid' as const }), weight: 3 },
  {
    arbitrary: fc
      .oneof(
        fc.stringMatching(/^Bearer [A-Za-z0-9._-]{0,80}$/),
        fc.stringMatching(/^[\x21-\x7e ]{0,60}$/),
        fc.constantFrom('Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Bearer a.b.c'),
      )
      .map((header) => ({ kind: 'raw' as const, header })),
    weight: 1,
  },
);

/**
 * What goes in a path parameter: arbitrary text, UUIDs, or (rarely) `$own`: something real the
 * caller may name (its session, its conversation or message, another account to block).
 */
const pathParameter = fc.oneof(
  { arbitrary: fc.string({ unit: 'binary', maxLength: 80 }), weight: 2 },
  { arbitrary: withControlChar(fc.string({ maxLength: 10 })), weight: 1 },
  { arbitrary: fc.uuid().map(String), weight: 2 },
  { arbitrary: fc.constant('$own'), weight: 1 },
);

/** For `:ref` (an influencer's id or handle): mostly the above, sometimes a real profile's. */
const refParameter = fc.oneof(
  { arbitrary: pathParameter, weight: 3 },
  { arbitrary: fc.constantFrom('$influencer_id', '$influencer_handle'), weight: 1 },
);

function claimsOf(accessToken: string): { sid: string } {
  return JSON.parse(Buffer.from(accessToken.split('.')[1] as string, 'base64url').toString());
}

function expectWellFormed(response: LightMyRequestResponse, what: string): void {
  expect(response.statusCode, what).toBeLessThan(500);
  expect(response.headers['content-type'], what).toMatch(/^application\/json/);
  let body: unknown;
  expect(() => (body = JSON.parse(response.body)), what).not.toThrow();
  expect(body !== null && typeof body === 'object' && !Array.isArray(body), what).toBe(true);
  if (response.statusCode >= 400) {
    const error = body as { message?: unknown; error?: unknown };
    expect(typeof error.message, what).toBe('string');
    expect(typeof error.error, what).toBe('string');
  }
}

describe.each(backends)('fuzzing every POST/PATCH/DELETE endpoint ($name)', (backend) => {
  let t: TestApp;
  let account: Account;
  let influencer: { id: string; handle: string };
  beforeAll(async () => {
    t = await TestApp.start(backend);
    account = await t.register();
    influencer = await createInfluencer(t);
  });
  afterAll(() => t.close());

  /**
   * A valid access token. A run may end the session (logout, session revocation), change the
   * password or delete the account (the fuzz values include the right password): then a fresh
   * account takes over.
   */
  async function validToken(): Promise<string> {
    const check = await t.call('GET', '/api/profile', { token: account.accessToken });
    if (check.statusCode !== 200) account = await t.register();
    return account.accessToken;
  }

  /** The fuzzed account's conversation (with one message of its own), made once per account. */
  const chats = new Map<string, { conversation: string; message: string; peer: string }>();
  async function ownChat() {
    await validToken();
    let chat = chats.get(account.userId);
    if (chat === undefined) {
      const peer = await t.register();
      const conversation = await openConversation(t, account, peer);
      const message = await new ChatClient(t, account).sent(conversation, 'fuzz me');
      chat = { conversation, message: message.id, peer: peer.userId };
      chats.set(account.userId, chat);
    }
    return chat;
  }

  /** A path parameter's value: `$`-names stand for real things of the fuzzed account. */
  async function parameterValue(url: string, raw: string): Promise<string> {
    if (raw === '$influencer_id') return influencer.id;
    if (raw === '$influencer_handle') return influencer.handle;
    if (raw !== '$own') return raw;
    if (url.startsWith('/api/chat/conversations/')) return (await ownChat()).conversation;
    if (url.startsWith('/api/chat/messages/')) return (await ownChat()).message;
    if (url.startsWith('/api/blocks/')) return (await ownChat()).peer;
    return claimsOf(await validToken()).sid;
  }

  it.each(ENDPOINTS.map((e) => [`${e.method} ${e.url}`, e] as const))(
    '%s: never 5xx; always a JSON object; errors carry message and error',
    async (_name, endpoint) => {
      const id = endpoint.url.includes('/:ref')
        ? refParameter
        : endpoint.url.includes('/:')
          ? pathParameter
          : fc.constant('');
      await fc.assert(
        fc.asyncProperty(bodyFor(endpoint), auth, id, async (shape, authKind, rawId) => {
          const headers: Record<string, string> = {};
          if (shape.contentType !== undefined) headers['content-type'] = shape.contentType;
          let token: string | undefined;
          if (authKind.kind === 'valid') token = await validToken();
          if (authKind.kind === 'raw') headers.authorization = authKind.header;
          if (token !== undefined) headers.authorization = `Bearer ${token}`;
          const idValue = await parameterValue(endpoint.url, rawId);
          const url = endpoint.url.replace(/:[a-z_]+/g, encodeURIComponent(idValue));
          const request: InjectOptions = {
            method: endpoint.method,
            url,
            headers,
            remoteAddress: randomIp(),
            ...(shape.payload !== undefined && { payload: shape.payload }),
          };
          const response = await t.app.inject(request);
          expectWellFormed(
            response,
            `${endpoint.method} ${url} [${shape.contentType}] → ${response.statusCode} ${response.body.slice(0, 300)}`,
          );
        }),
        { seed: 42, numRuns: NUM_RUNS },
      );
    },
  );
});
