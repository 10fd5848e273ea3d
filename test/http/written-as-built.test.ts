import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as chatSchemas from '../../src/chat/schemas.js';
import * as influencerSchemas from '../../src/influencer/schemas.js';
import { responseSerializer } from '../../src/http/serializer.js';
import { backends } from '../helpers/backends.js';
import { apiRouteTable } from '../helpers/route-table.js';
import type { Account, TestApp } from '../helpers/test-app.js';
import { TestApp as App } from '../helpers/test-app.js';
import { ChatClient } from '../chat/fixture.js';
import { confirmedAccount, creator, follow } from '../influencer/support.js';

interface RouteSchema {
  readonly response: Record<number, unknown>;
}

/**
 * The routes whose answers `JSON.stringify` writes (serializer.ts `writeAsBuilt`), each with its
 * schema: every answer of theirs must be what the schema's own serializer would write from it, so
 * no field the schema does not name (a hash, a token) and no value of another type can get out
 * without this test failing.
 */
const ROUTES: Record<string, RouteSchema> = {
  'GET /api/influencers': influencerSchemas.listSchema,
  'GET /api/influencers/following': influencerSchemas.followingSchema,
  'GET /api/influencers/me/followers': influencerSchemas.followersSchema,
  'GET /api/chat/conversations': chatSchemas.listConversationsSchema,
  'GET /api/chat/conversations/:id/messages': chatSchemas.listMessagesSchema,
  'GET /api/chat/conversations/:id/changes': chatSchemas.listChangesSchema,
};

const TABLE = await apiRouteTable();

describe.each(backends)('list pages written by JSON.stringify ($name)', (backend) => {
  let t: TestApp;
  let fan: Account;
  let ada: Account;
  let conversationId: string;

  beforeAll(async () => {
    t = await App.start(backend);
    const made = await creator(t, {
      display_name: 'Ада Лавлейс Σοφία 陈 "quoted" \\ back',
      bio: 'Line one\nline two\ttab <b>&</b> \u2028 emoji 🎻',
      avatar_url: 'https://cdn.example.com/ada.png',
      categories: ['music', 'tech'],
      links: [{ label: 'Site', url: 'https://ada.example.com/?a=1&b="2"' }],
      dm_policy: 'everyone',
    });
    ada = made.account;
    await creator(t, { display_name: 'Plain Bob' });
    fan = await confirmedAccount(t);
    expect((await follow(t, fan, made.handle)).statusCode).toBe(200);

    const started = await t.post(
      '/api/chat/conversations',
      { influencer_id: ada.userId },
      { token: fan.accessToken },
    );
    expect(started.statusCode, started.body).toBe(201);
    conversationId = started.json().conversation.id;
    const chat = new ChatClient(t, fan);
    await chat.sent(conversationId, 'first "one"\nwith a line');
    const edited = await chat.sent(conversationId, 'to be edited');
    expect((await chat.edit(edited.id, 'edited ✓')).statusCode).toBe(200);
    const deleted = await chat.sent(conversationId, 'to be deleted');
    expect((await chat.delete(deleted.id)).statusCode).toBe(200);

    // A peer whose account is gone: a conversation with every peer field null, tombstones.
    const leaving = await confirmedAccount(t);
    const other = await t.post(
      '/api/chat/conversations',
      { influencer_id: ada.userId },
      { token: leaving.accessToken },
    );
    await new ChatClient(t, leaving).sent(other.json().conversation.id, 'bye');
    const gone = await t.call('DELETE', '/api/profile', {
      token: leaving.accessToken,
      body: { password: leaving.password },
    });
    expect(gone.statusCode, gone.body).toBe(200);
  });
  afterAll(() => t?.close());

  /** The answer as the route's schema would have written it, through the service's serializer. */
  function schemaWritten(route: string, response: LightMyRequestResponse): string {
    const [method, url] = route.split(' ') as [string, string];
    const responses = ROUTES[route]?.response as Record<string, unknown> | undefined;
    const schema =
      responses?.[response.statusCode] ?? responses?.[`${String(response.statusCode)[0]}xx`];
    expect(schema, `${route} documents ${response.statusCode}`).toBeDefined();
    const compile = responseSerializer()(t.app.getSchemas(), {});
    const serialize = compile({ method, url, httpStatus: String(response.statusCode), schema });
    return serialize(response.json());
  }

  it('covers every route that opts in', () => {
    const optedIn = TABLE.filter((r) => r.writtenAsBuilt).map((r) => `${r.method} ${r.url}`);
    expect(optedIn.sort()).toEqual(Object.keys(ROUTES).sort());
  });

  type Who = 'anonymous' | 'fan' | 'ada';
  const cases: [route: string, path: string, who: Who][] = [
    ['GET /api/influencers', '/api/influencers', 'anonymous'],
    ['GET /api/influencers', '/api/influencers?q=лавл', 'fan'],
    ['GET /api/influencers', '/api/influencers?limit=1&sort=name', 'fan'],
    ['GET /api/influencers', '/api/influencers?cursor=forged', 'fan'],
    ['GET /api/influencers', '/api/influencers?limit=0', 'anonymous'],
    ['GET /api/influencers/following', '/api/influencers/following', 'fan'],
    ['GET /api/influencers/me/followers', '/api/influencers/me/followers', 'ada'],
    ['GET /api/chat/conversations', '/api/chat/conversations', 'ada'],
    ['GET /api/chat/conversations', '/api/chat/conversations', 'fan'],
    ['GET /api/chat/conversations/:id/messages', '{c}/messages', 'fan'],
    ['GET /api/chat/conversations/:id/messages', '{c}/messages?limit=1', 'ada'],
    ['GET /api/chat/conversations/:id/changes', '{c}/changes?since_version=0', 'ada'],
    ['GET /api/chat/conversations/:id/changes', '{c}/changes', 'ada'],
  ];

  it.each(cases)('%s: %s as %s answers what its schema would write', async (route, path, who) => {
    const url = path.replace('{c}', `/api/chat/conversations/${conversationId}`);
    const token = { anonymous: undefined, fan: fan.accessToken, ada: ada.accessToken }[who];
    const response = await t.call('GET', url, token === undefined ? {} : { token });
    // The same JSON, whatever the order of its keys (the schema's serializer writes required
    // fields first): an extra field, a missing one or another type fails.
    expect(JSON.parse(response.body)).toEqual(JSON.parse(schemaWritten(route, response)));
  });
});
