import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteEntry } from '../../src/http/route-table.js';
import { backends } from '../helpers/backends.js';
import { apiRouteTable } from '../helpers/route-table.js';
import { TestApp } from '../helpers/test-app.js';
import { ChatClient, twoMembers } from './fixture.js';

/** Every route that names a conversation or a message, from the app's own route table. */
const ROUTES = (await apiRouteTable()).filter((route) =>
  /^\/api\/chat\/(conversations|messages)\/:id/.test(route.url),
);

/** A body that fails validation on every route that takes one. */
const INVALID_BODY = { client_message_id: 'has spaces', text: 42, seq: 'x' };

describe.each(backends)('chat membership ($name)', (backend) => {
  let t: TestApp;
  let conversationId: string;
  let messageId: string;
  let outsider: ChatClient;
  beforeAll(async () => {
    t = await TestApp.start(backend);
    const { fan, id } = await twoMembers(t);
    conversationId = id;
    messageId = (await fan.sent(id, 'private')).id;
    outsider = new ChatClient(t, await t.register());
  });
  afterAll(() => t.close());

  const urlFor = (route: RouteEntry, id: string) => route.url.replace(':id', id);
  const realId = (route: RouteEntry) =>
    route.url.startsWith('/api/chat/messages') ? messageId : conversationId;
  const query = (route: RouteEntry) => (route.url.endsWith('/changes') ? '?since_version=0' : '');

  it('covers every conversation and message route', () => {
    expect(ROUTES.map((r) => `${r.method} ${r.url}`).sort()).toEqual([
      'DELETE /api/chat/messages/:id',
      'GET /api/chat/conversations/:id',
      'GET /api/chat/conversations/:id/changes',
      'GET /api/chat/conversations/:id/messages',
      'PATCH /api/chat/messages/:id',
      'POST /api/chat/conversations/:id/messages',
      'POST /api/chat/conversations/:id/read',
    ]);
  });

  it.each(ROUTES.map((r) => [`${r.method} ${r.url}`, r] as const))(
    '%s: a non-member gets the unknown-id 404, before the body or query is validated',
    async (_name, route) => {
      const method = route.method as 'GET';
      const asOutsider = (url: string, body?: unknown) =>
        t.call(method, url, { token: outsider.account.accessToken, body });
      const unknown = await asOutsider(urlFor(route, randomUUID()) + query(route));
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual({
        message: 'The requested resource was not found.',
        error: 'not_found',
      });
      const hidden = await asOutsider(urlFor(route, realId(route)) + query(route));
      expect(hidden.statusCode).toBe(404);
      expect(hidden.body).toBe(unknown.body);
      // Invalid input to a real conversation still answers 404, not 400.
      const body = route.bodyFields === undefined ? undefined : INVALID_BODY;
      const invalid = await asOutsider(`${urlFor(route, realId(route))}?limit=0&before=x`, body);
      expect(invalid.statusCode).toBe(404);
      expect(invalid.body).toBe(unknown.body);
    },
  );

  it.each(['not-a-uuid', 'A'.repeat(36), '%00', '..'])(
    'an id that cannot be ours (%s) is a 404 on every route',
    async (id) => {
      for (const route of ROUTES) {
        const response = await t.call(route.method as 'GET', urlFor(route, id) + query(route), {
          token: outsider.account.accessToken,
          ...(route.bodyFields !== undefined && { body: {} }),
        });
        expect(response.statusCode, `${route.method} ${route.url}`).toBe(404);
      }
    },
  );

  it('nothing a non-member tried changed the conversation', async () => {
    const rows = await t.db
      .selectFrom('chat_messages')
      .select(['text', 'version'])
      .where('conversation_id', '=', conversationId)
      .execute();
    expect(rows).toEqual([{ text: 'private', version: 1 }]);
  });

  it('without a token every chat route answers 401', async () => {
    for (const route of ROUTES) {
      const response = await t.call(route.method as 'GET', urlFor(route, conversationId));
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(401);
    }
  });
});
