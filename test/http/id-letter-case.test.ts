import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import type { Account, TestApp } from '../helpers/test-app.js';
import { TestApp as App } from '../helpers/test-app.js';
import { ChatClient } from '../chat/fixture.js';
import { confirmedAccount, creator } from '../influencer/support.js';

/**
 * Our ids are lower-case UUIDs, and a UUID names the same thing in any letter case (RFC 9562):
 * every route that takes one in its path or body finds the row whatever case it comes in, and
 * stores and answers it lower-case.
 */
describe.each(backends)('ids in upper case ($name)', (backend) => {
  let t: TestApp;
  let fan: Account;
  let star: Account;
  const upper = (id: string) => id.toUpperCase();

  beforeAll(async () => {
    t = await App.start(backend);
    star = (await creator(t, { dm_policy: 'everyone' })).account;
    fan = await confirmedAccount(t);
  });
  afterAll(() => t?.close());

  it('POST /api/chat/conversations takes the influencer id in upper case, and knows the caller’s own', async () => {
    const token = { token: fan.accessToken };
    const started = await t.post(
      '/api/chat/conversations',
      { influencer_id: upper(star.userId) },
      token,
    );
    expect(started.statusCode, started.body).toBe(201);
    const conversationId = started.json().conversation.id;
    expect(started.json().conversation.influencer_id).toBe(star.userId);
    const again = await t.post('/api/chat/conversations', { influencer_id: star.userId }, token);
    expect(again.statusCode).toBe(200);
    expect(again.json().conversation.id).toBe(conversationId);
    const self = await t.post(
      '/api/chat/conversations',
      { influencer_id: upper(star.userId) },
      { token: star.accessToken },
    );
    expect([self.statusCode, self.json().error]).toEqual([400, 'cannot_message_self']);
  });

  it('conversation and message routes take their ids in upper case', async () => {
    // A pair of its own: the test runs alone too.
    const influencer = (await creator(t, { dm_policy: 'everyone' })).account;
    const member = await confirmedAccount(t);
    const chat = new ChatClient(t, member);
    const started = await t.post(
      '/api/chat/conversations',
      { influencer_id: influencer.userId },
      { token: member.accessToken },
    );
    const conversationId = started.json().conversation.id as string;
    const message = await chat.sent(upper(conversationId), 'hello');
    expect(message.conversation_id).toBe(conversationId);
    expect((await chat.get(`/api/chat/conversations/${upper(conversationId)}`)).statusCode).toBe(
      200,
    );
    const edited = await chat.edit(upper(message.id), 'hello again');
    expect(edited.statusCode, edited.body).toBe(200);
    expect(edited.json().chat_message.id).toBe(message.id);
  });

  it('PUT and DELETE /api/blocks/{user_id} take the id in upper case, and store it lower-case', async () => {
    const token = { token: fan.accessToken };
    const blocked = await t.call('PUT', `/api/blocks/${upper(star.userId)}`, token);
    expect(blocked.json()).toEqual({ blocked: true });
    const listed = await t.call('GET', '/api/blocks', token);
    expect(listed.json().blocks.map((b: { user: { id: string } }) => b.user.id)).toEqual([
      star.userId,
    ]);
    const self = await t.call('PUT', `/api/blocks/${upper(fan.userId)}`, token);
    expect([self.statusCode, self.json().error]).toEqual([400, 'cannot_block_self']);
    const lifted = await t.call('DELETE', `/api/blocks/${upper(star.userId)}`, token);
    expect(lifted.json()).toEqual({ blocked: false });
    expect((await t.call('GET', '/api/blocks', token)).json().blocks).toEqual([]);
  });

  it('DELETE /api/sessions/{id} takes the id in upper case', async () => {
    const other = await t.login(fan.email, fan.password);
    const token = { token: fan.accessToken };
    const sessions = (await t.call('GET', '/api/sessions', token)).json().sessions as {
      id: string;
      current: boolean;
    }[];
    const id = sessions.find((s) => !s.current)?.id as string;
    expect((await t.call('DELETE', `/api/sessions/${upper(id)}`, token)).statusCode).toBe(200);
    const refreshed = await t.post('/api/refresh-token', { refresh_token: other.refreshToken });
    expect(refreshed.statusCode).toBe(401);
  });
});
