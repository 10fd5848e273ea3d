import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { creator, follow } from '../influencer/support.js';
import { ChatClient, errorOf, fanAndCreator, start, type ConversationBody } from './fixture.js';

describe.each(backends)('starting conversations ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const pair = (fields?: Record<string, unknown>) => fanAndCreator(t, fields);

  const conversationOf = (response: { json(): { conversation: ConversationBody } }) =>
    response.json().conversation;

  it('201 creates the conversation, seen from the caller with the peer as its profile shows', async () => {
    const { fan, influencer, handle } = await pair();
    const response = await start(fan, influencer.userId);
    expect(response.statusCode).toBe(201);
    const conversation = conversationOf(response);
    expect(conversation).toMatchObject({
      influencer_id: influencer.userId,
      peer: { id: influencer.userId, name: 'Ada Creator', avatar_url: null, handle },
      accepted: false,
      last_seq: 0,
      version: 0,
      last_message: null,
      unread_count: 0,
      last_read_seq: 0,
      can_send: true,
      blocked_by_me: false,
      last_message_at: null,
    });
    expect(Object.keys(conversation).sort()).toEqual(
      [
        'id',
        'influencer_id',
        'peer',
        'accepted',
        'last_seq',
        'version',
        'last_message',
        'unread_count',
        'last_read_seq',
        'can_send',
        'blocked_by_me',
        'created_at',
        'last_message_at',
      ].sort(),
    );
    // The influencer sees the fan's account: its name, no handle.
    expect((await influencer.conversation(conversation.id)).peer).toEqual({
      id: fan.userId,
      name: null,
      avatar_url: null,
      handle: null,
    });
  });

  it('200 with the same conversation when the pair has one, whoever started it', async () => {
    const { fan, influencer } = await pair();
    const first = conversationOf(await start(fan, influencer.userId));
    const again = await start(fan, influencer.userId);
    expect(again.statusCode).toBe(200);
    expect(conversationOf(again).id).toBe(first.id);
    const reverse = await start(influencer, fan.userId);
    expect(reverse.statusCode).toBe(200);
    expect(conversationOf(reverse).id).toBe(first.id);
  });

  it('concurrent starts of one pair create one conversation', async () => {
    const { fan, influencer } = await pair();
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => start(fan, influencer.userId)),
    );
    expect(responses.map((r) => r.statusCode).sort()).toEqual([...Array<number>(9).fill(200), 201]);
    expect(new Set(responses.map((r) => conversationOf(r).id)).size).toBe(1);
    const rows = await t.db
      .selectFrom('conversations')
      .select('id')
      .where('influencer_id', '=', influencer.userId)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('404 for no such influencer: an unknown id, an account without a profile, not an id', async () => {
    const { fan } = await pair();
    const plain = await t.register();
    for (const id of [randomUUID(), plain.userId, 'not-an-id', '']) {
      expect(errorOf(await start(fan, id))).toEqual([404, 'not_found']);
    }
  });

  it('404 for a string of any length that names no influencer, a long one too', async () => {
    const { fan } = await pair();
    for (const id of ['x'.repeat(65), `${randomUUID()}${'0'.repeat(100)}`]) {
      expect(errorOf(await start(fan, id))).toEqual([404, 'not_found']);
    }
  });

  it('400 cannot_message_self; 400 validation_failed without influencer_id', async () => {
    const { influencer } = await pair();
    expect(errorOf(await start(influencer, influencer.userId))).toEqual([
      400,
      'cannot_message_self',
    ]);
    const missing = await influencer.call('POST', '/api/chat/conversations', {});
    expect(errorOf(missing)).toEqual([400, 'validation_failed']);
    const wrongType = await influencer.call('POST', '/api/chat/conversations', {
      influencer_id: 7,
    });
    expect(errorOf(wrongType)).toEqual([400, 'validation_failed']);
  });

  it("DM policy 'followers': 403 not_following until the fan follows", async () => {
    const { fan, influencer } = await pair({ dm_policy: 'followers' });
    expect(errorOf(await start(fan, influencer.userId))).toEqual([403, 'not_following']);
    expect((await follow(t, fan.account, influencer.userId)).statusCode).toBe(200);
    expect((await start(fan, influencer.userId)).statusCode).toBe(201);
  });

  it("DM policy 'nobody': 403 messages_disabled", async () => {
    const { fan, influencer } = await pair({ dm_policy: 'nobody' });
    expect(errorOf(await start(fan, influencer.userId))).toEqual([403, 'messages_disabled']);
  });

  it('blocks: 403 user_blocked (you blocked them), 403 cannot_message (they blocked you)', async () => {
    const { fan, influencer } = await pair();
    await fan.call('PUT', `/api/blocks/${influencer.userId}`);
    expect(errorOf(await start(fan, influencer.userId))).toEqual([403, 'user_blocked']);
    await fan.call('DELETE', `/api/blocks/${influencer.userId}`);
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    expect(errorOf(await start(fan, influencer.userId))).toEqual([403, 'cannot_message']);
  });

  it('20 new conversations an hour per user, then 429 with Retry-After; existing ones do not count', async () => {
    const fan = new ChatClient(t, await t.register());
    const influencers = [];
    for (let i = 0; i < 21; i++) influencers.push((await creator(t, { dm_policy: 'everyone' })).id);
    for (const id of influencers.slice(0, 20)) expect((await start(fan, id)).statusCode).toBe(201);
    const refused = await start(fan, influencers[20] as string);
    expect(errorOf(refused)).toEqual([429, 'rate_limited']);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await start(fan, influencers[0] as string)).statusCode).toBe(200);
  });

  it('a start refused by DM policy (403) does not count against the 20 an hour', async () => {
    const fan = new ChatClient(t, await t.register());
    const closed = (await creator(t, { dm_policy: 'nobody' })).id;
    for (let i = 0; i < 20; i++)
      expect(errorOf(await start(fan, closed))).toEqual([403, 'messages_disabled']);
    const open = (await creator(t, { dm_policy: 'everyone' })).id;
    expect((await start(fan, open)).statusCode).toBe(201);
  });

  it('a deleted influencer profile: the existing conversation stays (200), no new one (404)', async () => {
    const { fan, influencer } = await pair();
    const other = new ChatClient(t, await t.register());
    const first = conversationOf(await start(fan, influencer.userId));
    expect((await influencer.call('DELETE', '/api/influencers/me')).statusCode).toBe(200);
    const again = await start(fan, influencer.userId);
    expect(again.statusCode).toBe(200);
    expect(conversationOf(again)).toMatchObject({ id: first.id, can_send: true });
    expect(conversationOf(again).peer.handle).toBeNull();
    expect(errorOf(await start(other, influencer.userId))).toEqual([404, 'not_found']);
    await fan.sent(first.id, 'still here');
  });

  it("DM policy binds the starter's sends until the influencer's first message accepts", async () => {
    const { fan, influencer } = await pair({ dm_policy: 'everyone' });
    const id = conversationOf(await start(fan, influencer.userId)).id;
    await fan.sent(id, 'hello');
    await influencer.call('PATCH', '/api/influencers/me', { dm_policy: 'nobody' });
    expect(errorOf(await fan.send(id, 'again?'))).toEqual([403, 'messages_disabled']);
    expect(await fan.conversation(id)).toMatchObject({ can_send: false, accepted: false });
    // The influencer is never bound by its own policy; its first message accepts.
    await influencer.sent(id, 'hi there');
    expect(await fan.conversation(id)).toMatchObject({ can_send: true, accepted: true });
    await fan.sent(id, 'thanks');
    // From then on only blocks stop either member.
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    expect(errorOf(await fan.send(id, 'blocked'))).toEqual([403, 'cannot_message']);
  });

  it("'followers' policy: a fan who unfollows before acceptance cannot send", async () => {
    const { fan, influencer } = await pair({ dm_policy: 'followers' });
    await follow(t, fan.account, influencer.userId);
    const id = conversationOf(await start(fan, influencer.userId)).id;
    await fan.sent(id, 'hi');
    // The conversation and the list say so too: their can_send reads the follow with the listing.
    const listed = async () =>
      (await fan.get('/api/chat/conversations')).json().conversations[0] as ConversationBody;
    expect(await fan.conversation(id)).toMatchObject({ can_send: true });
    expect(await listed()).toMatchObject({ id, can_send: true });
    await t.call('DELETE', `/api/influencers/${influencer.userId}/follow`, {
      token: fan.account.accessToken,
    });
    expect(errorOf(await fan.send(id, 'still?'))).toEqual([403, 'not_following']);
    expect(await fan.conversation(id)).toMatchObject({ can_send: false });
    expect(await listed()).toMatchObject({ id, can_send: false });
  });

  it('a conversation without messages is listed only to its starter', async () => {
    const { fan, influencer } = await pair();
    const id = conversationOf(await start(fan, influencer.userId)).id;
    const listed = async (client: ChatClient) =>
      (await client.get('/api/chat/conversations'))
        .json()
        .conversations.map((c: { id: string }) => c.id);
    expect(await listed(fan)).toEqual([id]);
    expect(await listed(influencer)).toEqual([]);
    await fan.sent(id, 'hello');
    expect(await listed(influencer)).toEqual([id]);
  });
});
