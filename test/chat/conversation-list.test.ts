import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import {
  ChatClient,
  errorOf,
  fanAndCreator,
  openConversation,
  start,
  type ConversationBody,
} from './fixture.js';

describe.each(backends)('the conversation list ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  /** An influencer with conversations started by `n` fans, each fan having sent one message. */
  async function inbox(n: number) {
    const influencer = new ChatClient(t, await t.register());
    const fans: { fan: ChatClient; id: string }[] = [];
    for (let i = 0; i < n; i++) {
      const fan = new ChatClient(t, await t.register());
      const id = await openConversation(t, fan.account, influencer.account);
      t.clock.advance(1_000);
      await fan.sent(id, `from fan ${i}`);
      fans.push({ fan, id });
    }
    return { influencer, fans };
  }

  async function everyPage(client: ChatClient, query: string, limit: number) {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const url = `/api/chat/conversations?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ''}`;
      const response = await client.get(url);
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.conversations.length).toBeLessThanOrEqual(limit);
      ids.push(...body.conversations.map((c: ConversationBody) => c.id));
      cursor = body.next_cursor;
    } while (cursor !== null);
    return ids;
  }

  it('latest message first; a new message moves its conversation to the top', async () => {
    const { influencer, fans } = await inbox(4);
    const newestFirst = fans.map((f) => f.id).reverse();
    expect(await everyPage(influencer, '', 20)).toEqual(newestFirst);
    t.clock.advance(1_000);
    await influencer.sent(fans[0]?.id as string, 'reply to the oldest');
    expect((await everyPage(influencer, '', 20))[0]).toBe(fans[0]?.id);
  });

  it('a conversation without messages sorts by its created_at among the others', async () => {
    const { fan, influencer: first } = await fanAndCreator(t);
    const second = await fanAndCreator(t);
    const older = (await start(fan, first.userId)).json().conversation.id as string;
    await fan.sent(older, 'hello');
    t.clock.advance(1_000);
    const empty = (await start(fan, second.influencer.userId)).json().conversation.id as string;
    expect(await everyPage(fan, '', 20)).toEqual([empty, older]);
    t.clock.advance(1_000);
    await fan.sent(older, 'again');
    expect(await everyPage(fan, '', 20)).toEqual([older, empty]);
  });

  it('pages with next_cursor list every conversation exactly once, at any limit', async () => {
    const { influencer, fans } = await inbox(7);
    const all = fans.map((f) => f.id).reverse();
    for (const limit of [1, 2, 3, 7, 100])
      expect(await everyPage(influencer, '', limit)).toEqual(all);
  });

  it('conversations with the same activity time page exactly once, at any limit', async () => {
    const influencer = new ChatClient(t, await t.register());
    // A frozen clock gives every conversation the same activity time: only the id orders them.
    const frozen = t.clock.freeze();
    const ids: string[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const fan = new ChatClient(t, await t.register());
        const id = await openConversation(t, fan.account, influencer.account);
        await fan.sent(id, `from fan ${i}`);
        ids.push(id);
      }
    } finally {
      frozen.thaw();
    }
    for (const limit of [1, 2, 3, 4, 100]) {
      const seen = await everyPage(influencer, '', limit);
      expect([...seen].sort(), `limit ${limit}`).toEqual([...ids].sort());
    }
  });

  it('unread_only lists the conversations with unread messages', async () => {
    const { influencer, fans } = await inbox(3);
    await influencer.read(fans[1]?.id as string);
    const unread = await everyPage(influencer, '&unread_only=true', 1);
    expect(unread).toEqual([fans[2]?.id, fans[0]?.id]);
    expect(await everyPage(influencer, '&unread_only=false', 5)).toHaveLength(3);
    // The fans' own messages are not unread to them.
    expect(await everyPage(fans[0]?.fan as ChatClient, '&unread_only=true', 5)).toEqual([]);
  });

  it('unread_only leaves out a conversation whose only unread message was deleted', async () => {
    const { influencer, fans } = await inbox(2);
    const emptied = fans[0]?.id as string;
    const kept = fans[1]?.id as string;
    const message = (await influencer.conversation(emptied)).last_message;
    expect(await everyPage(influencer, '&unread_only=true', 5)).toEqual([kept, emptied]);
    const deleted = await (fans[0]?.fan as ChatClient).delete(message?.id as string);
    expect(deleted.statusCode).toBe(200);
    expect((await influencer.conversation(emptied)).unread_count).toBe(0);
    expect(await everyPage(influencer, '&unread_only=true', 5)).toEqual([kept]);
  });

  it('each conversation carries its last message and unread count', async () => {
    const { influencer, fans } = await inbox(2);
    const body = (await influencer.get('/api/chat/conversations')).json();
    expect(body.conversations[0]).toMatchObject({
      id: fans[1]?.id,
      unread_count: 1,
      last_seq: 1,
      last_message: { text: 'from fan 1', seq: 1 },
    });
    expect(body.conversations[0].last_message).not.toHaveProperty('client_message_id');
    expect(body.next_cursor).toBeNull();
  });

  it('a cursor is bound to its list: altered, or used with another unread_only, is 400 invalid_cursor', async () => {
    const { influencer } = await inbox(3);
    const first = (await influencer.get('/api/chat/conversations?limit=1')).json();
    const cursor = first.next_cursor as string;
    const altered = cursor.slice(0, -2) + (cursor.endsWith('A') ? 'BB' : 'AA');
    expect(errorOf(await influencer.get(`/api/chat/conversations?cursor=${altered}`))).toEqual([
      400,
      'invalid_cursor',
    ]);
    expect(
      errorOf(await influencer.get(`/api/chat/conversations?unread_only=true&cursor=${cursor}`)),
    ).toEqual([400, 'invalid_cursor']);
    const overlong = `${'A'.repeat(9000)}${cursor}`;
    expect(errorOf(await influencer.get(`/api/chat/conversations?cursor=${overlong}`))).toEqual([
      400,
      'invalid_cursor',
    ]);
    // Another account cannot use it either.
    const other = new ChatClient(t, await t.register());
    expect(errorOf(await other.get(`/api/chat/conversations?cursor=${cursor}`))).toEqual([
      400,
      'invalid_cursor',
    ]);
  });

  it.each(['limit=0', 'limit=101', 'limit=x', 'unread_only=yes', 'unread_only=1'])(
    '%s is 400 validation_failed',
    async (query) => {
      const { influencer } = await inbox(0);
      expect(errorOf(await influencer.get(`/api/chat/conversations?${query}`))).toEqual([
        400,
        'validation_failed',
      ]);
    },
  );
});
