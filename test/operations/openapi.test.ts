import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withThrowawayApp } from '../../scripts/throwaway-app.js';
import { ERROR_CODES, Errors, type ApiError } from '../../src/errors.js';
import { isApiPath } from '../../src/http/authenticate.js';
import { patternRule } from '../../src/http/schemas.js';
import type { RouteEntry } from '../../src/http/route-table.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';

// The document depends on the routes, not on the database: it is read once, off a throw-away
// SQLite app. (`npm run lint:openapi`, run by .ci/run, lints the same document with Redocly.)

interface Operation {
  operationId?: string;
  security?: Record<string, string[]>[];
  requestBody?: {
    required?: boolean;
    content: { 'application/json': { schema: { required?: string[] } } };
  };
  parameters?: { in: string }[];
  responses: Record<
    string,
    {
      description?: string;
      content?: { 'application/json'?: { schema?: unknown } };
      headers?: Record<string, { schema?: unknown }>;
    }
  >;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
  tags: { name: string; description?: string }[];
}

/**
 * Routes that stay out of the document on purpose: not part of the API, or (the chat WebSocket)
 * not an HTTP operation.
 */
const UNDOCUMENTED = /^\/(metrics|openapi\.json|asyncapi\.json|docs|api\/chat\/ws)(\/|$)/;
const ERROR_BODY = { $ref: '#/components/schemas/ErrorBody' };

/** The client method names API.md's readers expect, for the routes that exist today. */
const EXPECTED_IDS: Record<string, string> = {
  'POST /api/register': 'register',
  'POST /api/login': 'login',
  'POST /api/refresh-token': 'refreshToken',
  'POST /api/logout': 'logout',
  'POST /api/send-confirmation-code': 'sendConfirmationCode',
  'POST /api/confirm-email': 'confirmEmail',
  'POST /api/change-password': 'changePassword',
  'POST /api/forgot-password': 'forgotPassword',
  'POST /api/reset-password': 'resetPassword',
  'GET /api/sessions': 'listSessions',
  'DELETE /api/sessions/{id}': 'revokeSession',
  'GET /api/profile': 'getProfile',
  'PATCH /api/profile': 'updateProfile',
  'DELETE /api/profile': 'deleteAccount',
  'GET /healthz': 'getHealth',
  'GET /readyz': 'getReadiness',
  'GET /.well-known/jwks.json': 'getSigningKeys',
};

/** Routes that take a bearer token and count their callers themselves (API.md's limits). */
const LIMITED_BEARER_ROUTES = [
  'POST /api/change-password',
  'DELETE /api/profile',
  'PUT /api/influencers/{ref}/follow',
  'DELETE /api/influencers/{ref}/follow',
  'POST /api/chat/conversations',
  'POST /api/chat/conversations/{id}/messages',
];

/** API.md's "notable errors" of each route, by status (401 and 429 of any route: see above). */
const NOTABLE_ERRORS: Record<string, Record<string, string[]>> = {
  'POST /api/register': { 400: ['validation_failed', 'weak_password'], 409: ['email_taken'] },
  'POST /api/login': { 401: ['invalid_credentials'], 429: ['too_many_attempts'] },
  'POST /api/refresh-token': { 401: ['invalid_refresh_token'] },
  'POST /api/send-confirmation-code': { 403: ['email_mismatch'], 429: ['too_many_requests'] },
  'POST /api/confirm-email': { 400: ['invalid_code'], 403: ['email_mismatch'] },
  'POST /api/change-password': {
    400: ['incorrect_password', 'weak_password', 'same_password'],
    429: ['too_many_attempts'],
  },
  'POST /api/forgot-password': { 429: ['too_many_requests'] },
  'POST /api/reset-password': { 400: ['invalid_code', 'weak_password'] },
  'DELETE /api/sessions/{id}': { 404: ['not_found'] },
  'DELETE /api/profile': { 400: ['incorrect_password'] },
  'POST /api/influencers': {
    403: ['email_not_confirmed'],
    409: ['already_influencer', 'handle_taken'],
  },
  'GET /api/influencers/me': { 404: ['not_influencer'] },
  'PATCH /api/influencers/me': { 404: ['not_influencer'], 409: ['handle_taken'] },
  'DELETE /api/influencers/me': { 404: ['not_influencer'] },
  'GET /api/influencers/{ref}': { 404: ['not_found'] },
  'GET /api/influencers': { 400: ['validation_failed', 'invalid_cursor'] },
  'PUT /api/influencers/{ref}/follow': {
    400: ['cannot_follow_self'],
    403: ['cannot_follow', 'user_blocked'],
    404: ['not_found'],
    429: ['rate_limited'],
  },
  'DELETE /api/influencers/{ref}/follow': { 404: ['not_found'], 429: ['rate_limited'] },
  'GET /api/influencers/following': { 400: ['invalid_cursor'] },
  'GET /api/influencers/me/followers': { 400: ['invalid_cursor'], 404: ['not_influencer'] },
  'POST /api/chat/conversations': {
    400: ['cannot_message_self'],
    403: ['not_following', 'messages_disabled', 'cannot_message', 'user_blocked'],
    404: ['not_found'],
    429: ['rate_limited'],
  },
  'GET /api/chat/conversations': { 400: ['invalid_cursor'] },
  'GET /api/chat/conversations/{id}': { 404: ['not_found'] },
  'POST /api/chat/conversations/{id}/messages': {
    403: ['not_following', 'messages_disabled', 'cannot_message', 'user_blocked'],
    404: ['not_found'],
    422: ['idempotency_key_reused'],
    429: ['rate_limited'],
  },
  'GET /api/chat/conversations/{id}/messages': { 400: ['validation_failed'], 404: ['not_found'] },
  'GET /api/chat/conversations/{id}/changes': { 404: ['not_found'] },
  'POST /api/chat/conversations/{id}/read': { 400: ['validation_failed'], 404: ['not_found'] },
  'PATCH /api/chat/messages/{id}': {
    403: ['not_message_author', 'edit_window_expired', 'cannot_message', 'user_blocked'],
    404: ['not_found'],
    409: ['message_deleted'],
  },
  'DELETE /api/chat/messages/{id}': { 403: ['not_message_author'], 404: ['not_found'] },
  'PUT /api/blocks/{user_id}': { 400: ['cannot_block_self'], 404: ['not_found'] },
  'DELETE /api/blocks/{user_id}': { 404: ['not_found'] },
  'GET /api/blocks': { 400: ['invalid_cursor'] },
};

let doc: Document;
let routes: (RouteEntry & { path: string; name: string })[];
const operationOf = (route: { path: string; method: string }) =>
  doc.paths[route.path]?.[route.method.toLowerCase()];
const schemaOf = (response: Operation['responses'][string] | undefined) =>
  response?.content?.['application/json']?.schema;

beforeAll(async () => {
  const read = await withThrowawayApp(async (app) => ({
    doc: app.swagger() as unknown as Document,
    table: app.routeTable(),
  }));
  doc = read.doc;
  routes = read.table
    .filter((r) => r.method !== 'HEAD' && !UNDOCUMENTED.test(r.url))
    .map((r) => {
      const path = r.url.replace(/:([A-Za-z_]+)/g, '{$1}');
      return { ...r, path, name: `${r.method} ${path}` };
    });
});

describe('the OpenAPI document', () => {
  it('has every route of the app, each with an operationId that reads as a method name', () => {
    expect(routes.length).toBeGreaterThanOrEqual(Object.keys(EXPECTED_IDS).length);
    const ids = routes.map((route) => [route.name, operationOf(route)?.operationId] as const);
    for (const [name, id] of ids) expect({ name, id }).toEqual({ name, id: expect.any(String) });
    for (const [name, id] of ids) expect(id, name).toMatch(/^[a-z]+(?:[A-Z][a-z0-9]*)*$/);
    expect(new Set(ids.map(([, id]) => id)).size).toBe(ids.length);
    for (const [name, id] of Object.entries(EXPECTED_IDS)) expect(new Map(ids).get(name)).toBe(id);
  });

  it("declares each route's security as the authentication hook enforces its config.access", () => {
    const expected = {
      public: [],
      optional: [{}, { bearerAuth: [] }],
      socket: [{}, { bearerAuth: [] }],
      bearer: [{ bearerAuth: [] }],
    };
    for (const route of routes) {
      const access = isApiPath(route.url) ? (route.access ?? 'bearer') : 'public';
      expect({ route: route.name, security: operationOf(route)?.security }).toEqual({
        route: route.name,
        security: expected[access],
      });
    }
  });

  it('documents the error body for 5xx on every route, and for 4xx on every /api route', () => {
    for (const route of routes) {
      const responses = operationOf(route)?.responses ?? {};
      expect(schemaOf(responses['5XX']), route.name).toEqual(ERROR_BODY);
      if (isApiPath(route.url)) expect(schemaOf(responses['4XX']), route.name).toEqual(ERROR_BODY);
    }
  });

  it('documents 401 with WWW-Authenticate: Bearer on every /api route that reads a token', () => {
    const reading = routes.filter((r) => isApiPath(r.url) && r.access !== 'public');
    expect(reading.length).toBeGreaterThan(10);
    for (const route of reading) {
      const unauthorized = operationOf(route)?.responses['401'];
      expect(schemaOf(unauthorized), route.name).toEqual(ERROR_BODY);
      expect(unauthorized?.headers?.['WWW-Authenticate']?.schema, route.name).toMatchObject({
        const: 'Bearer',
      });
    }
  });

  it('documents 429 with Retry-After on every /api route: the anonymous budget counts a bad token anywhere', () => {
    const api = routes.filter((r) => isApiPath(r.url));
    const limited = routes.filter((r) => LIMITED_BEARER_ROUTES.includes(r.name));
    expect(limited).toHaveLength(LIMITED_BEARER_ROUTES.length);
    for (const route of api) {
      const tooMany = operationOf(route)?.responses['429'];
      expect(schemaOf(tooMany), route.name).toEqual(ERROR_BODY);
      expect(tooMany?.headers?.['Retry-After']?.schema, route.name).toMatchObject({
        type: 'integer',
        minimum: 1,
      });
    }
    const others = routes.filter((r) => !api.includes(r));
    for (const route of others)
      expect(operationOf(route)?.responses['429'], route.name).toBeUndefined();
  });

  it("documents each route's notable errors of API.md under their statuses, with their codes", () => {
    const missing: string[] = [];
    for (const [name, statuses] of Object.entries(NOTABLE_ERRORS)) {
      const [method, path] = name.split(' ') as [string, string];
      const responses = doc.paths[path]?.[method.toLowerCase()]?.responses ?? {};
      for (const [status, codes] of Object.entries(statuses)) {
        const described = (responses[status] as { description?: string } | undefined)?.description;
        if (schemaOf(responses[status]) === undefined) missing.push(`${name} ${status}`);
        for (const code of codes)
          if (!described?.includes(`\`${code}\``)) missing.push(`${name} ${status} ${code}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("documents the errors of a request's own shape where a route reads a body or a query", () => {
    const named = (operation: Operation | undefined, status: string) =>
      operation?.responses[status]?.description?.match(/`[a-z_]+`/g) ?? [];
    let reading = 0;
    for (const route of routes.filter((r) => isApiPath(r.url))) {
      const operation = operationOf(route);
      // A route of a method that may carry a body reads one even without a body schema: it refuses
      // `[]` (validation_failed), broken JSON and other media types as every route does.
      const body =
        operation?.requestBody !== undefined ||
        ['POST', 'PUT', 'PATCH', 'DELETE'].includes(route.method);
      const query = operation?.parameters?.some((p) => p.in === 'query') ?? false;
      if (!body && !query) continue;
      reading++;
      const expected = body ? ['`invalid_json`', '`validation_failed`'] : ['`validation_failed`'];
      expect(named(operation, '400'), route.name).toEqual(expect.arrayContaining(expected));
      if (!body) continue;
      expect(named(operation, '413'), route.name).toEqual(['`payload_too_large`']);
      expect(named(operation, '415'), route.name).toEqual(['`unsupported_media_type`']);
    }
    expect(reading).toBeGreaterThan(20);
    // The route's own codes stay beside them.
    const confirm = doc.paths['/api/confirm-email']?.post;
    expect(named(confirm, '400')).toEqual([
      '`invalid_code`',
      '`invalid_json`',
      '`validation_failed`',
    ]);
  });

  it("lists the catalogue's codes as the enum of the error body's `error`", () => {
    const codes = doc.components.schemas.ErrorBody?.properties.error?.enum;
    expect(codes).toEqual([...ERROR_CODES]);
    expect(codes).toEqual(expect.arrayContaining(['validation_failed', 'unauthorized']));
    expect(codes).toEqual(expect.arrayContaining(['method_not_allowed', 'rate_limited']));
  });

  it('states the password policy where a password is chosen, and only there', () => {
    const passwordField = (path: string, method: string, field: string) => {
      const body = doc.paths[path]?.[method]?.requestBody?.content['application/json'].schema as {
        properties: Record<string, { description?: string }>;
      };
      return body.properties[field]?.description ?? '';
    };
    const chosen = [
      ['/api/register', 'post', 'password'],
      ['/api/change-password', 'post', 'new_password'],
      ['/api/reset-password', 'post', 'new_password'],
    ];
    const proved = [
      ['/api/login', 'post', 'password'],
      ['/api/change-password', 'post', 'password'],
      ['/api/profile', 'delete', 'password'],
    ];
    for (const [path, method, field] of chosen)
      expect(passwordField(path!, method!, field!), `${path} ${field}`).toMatch(/policy/);
    for (const [path, method, field] of proved)
      expect(passwordField(path!, method!, field!), `${path} ${field}`).toMatch(
        /^The account's current password/,
      );
  });

  it('gives every `pattern` a rule in words, which a value failing it is answered with', () => {
    const patterns = new Set<string>();
    const walk = (node: unknown): void => {
      if (typeof node !== 'object' || node === null) return;
      const { pattern } = node as { pattern?: unknown };
      if (typeof pattern === 'string') patterns.add(pattern);
      Object.values(node).forEach(walk);
    };
    walk(doc);
    expect(patterns.size).toBeGreaterThanOrEqual(5);
    for (const pattern of patterns)
      expect({ pattern, rule: patternRule(pattern) }).toEqual({
        pattern,
        rule: expect.stringMatching(/^must /),
      });
  });

  it('describes every tag it uses', () => {
    const used = new Set(
      Object.values(doc.paths).flatMap((ops) =>
        Object.values(ops).flatMap((op) => (op as { tags?: string[] }).tags ?? []),
      ),
    );
    const described = new Set(doc.tags.filter((t) => t.description).map((t) => t.name));
    for (const tag of used) expect(described, tag).toContain(tag);
  });
});

describe('the error catalogue', () => {
  it.each(Object.entries(Errors))('%s names the code of the error it makes', (_, entry) => {
    // Any argument will do: the code never depends on it (the status may: clientError's).
    const made = (entry as unknown as (...args: unknown[]) => ApiError)([]);
    expect(made.code).toBe(entry.code);
  });
});

describe.each(backends)('error answers in practice ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('carry codes the document lists', async () => {
    const answers = await Promise.all([
      t.call('GET', '/api/nowhere'),
      t.call('PUT', '/api/profile'),
      t.call('GET', '/api/profile'),
      t.post('/api/login', 'not json', { headers: { 'content-type': 'text/plain' } }),
      t.post('/api/login', '{', { headers: { 'content-type': 'application/json' } }),
      t.post('/api/login', { email: 42 }),
    ]);
    const codes = answers.map((a) => a.json().error as string);
    expect(new Set(codes).size).toBe(answers.length);
    for (const code of codes) expect(ERROR_CODES).toContain(code);
  });
});

describe.each(backends)('request bodies in practice ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('a body whose every field is optional may be left out, and the document says so', async () => {
    // API.md: `POST /api/logout` takes an optional `all`, `PATCH /api/profile` optional fields.
    const account = await t.register();
    const patched = await t.call('PATCH', '/api/profile', { token: account.accessToken });
    expect(patched.statusCode, patched.body).toBe(200);
    const loggedOut = await t.call('POST', '/api/logout', { token: account.accessToken });
    expect(loggedOut.statusCode, loggedOut.body).toBe(200);

    const served = (await t.call('GET', '/openapi.json')).json() as Document;
    const bodies = Object.entries(served.paths).flatMap(([path, operations]) =>
      Object.entries(operations).flatMap(([method, operation]) =>
        operation.requestBody === undefined ? [] : [[`${method} ${path}`, operation.requestBody]],
      ),
    ) as [string, NonNullable<Operation['requestBody']>][];
    expect(bodies.map(([name]) => name)).toEqual(
      expect.arrayContaining(['post /api/logout', 'patch /api/profile']),
    );
    for (const [name, body] of bodies) {
      const fields = body.content['application/json'].schema.required ?? [];
      expect({ name, required: body.required }).toEqual({ name, required: fields.length > 0 });
    }
  });
});
