import { createHash } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteAccountRecords } from '../../src/accounts/deletion.js';
import { tombstoneMessagesOf } from '../../src/chat/account-deletion.js';
import type { BusEvent } from '../../src/events/bus.js';
import { MemoryEventBus } from '../../src/events/memory-bus.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';
import { ChatClient, changesSince, errorOf, start, type ChatMessageBody } from './fixture.js';

describe.each(backends)('deleting an account, for chat ($name)', (backend) => {
  let t: TestApp;
  const bus = new MemoryEventBus(pino({ level: 'silent' }));
  beforeAll(async () => {
    t = await TestApp.start(backend, { overrides: { events: bus } });
  });
  afterAll(() => t.close());

  async function conversation() {
    const made = await creator(t, { dm_policy: 'everyone' });
    const influencer = new ChatClient(t, made.account);
    const fan = new ChatClient(t, await t.register());
    const id = (await start(fan, influencer.userId)).json().conversation.id as string;
    return { fan, influencer, id, handle: made.handle };
  }

  const deleteAccount = (client: ChatClient) =>
    client.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });

  it("turns each of the account's messages into a tombstone with sender_id null, one version each", async () => {
    const { fan, influencer, id } = await conversation();
    const mine = [await fan.sent(id, 'one'), await fan.sent(id, 'two')];
    const theirs = await influencer.sent(id, 'reply');
    await fan.delete(mine[0]?.id as string); // already a tombstone: still loses its sender
    const before = await influencer.conversation(id);
    const events: BusEvent[] = [];
    await bus.subscribe(influencer.userId, (d) => events.push(d.event));

    expect((await deleteAccount(fan)).statusCode).toBe(200);

    const after = await influencer.conversation(id);
    expect(after.version).toBe(before.version + 2);
    expect(after.last_seq).toBe(3);
    const feed = await changesSince(influencer, id, before.version);
    expect(feed.messages.map((m) => [m.id, m.sender_id, m.text, m.deleted])).toEqual([
      [mine[0]?.id, null, null, true],
      [mine[1]?.id, null, null, true],
    ]);
    expect(feed.messages.map((m) => m.version)).toEqual([before.version + 1, before.version + 2]);
    expect(events).toEqual(
      feed.messages.map((m: ChatMessageBody) => ({
        type: 'message.deleted',
        conversation_id: id,
        version: m.version,
        chat_message: m,
      })),
    );
    const page = (await influencer.get(`/api/chat/conversations/${id}/messages`)).json();
    expect(page.messages.map((m: ChatMessageBody) => m.seq)).toEqual([1, 2, 3]);
    expect(page.messages[2]).toMatchObject({ id: theirs.id, text: 'reply' });
  });

  // "Its messages become tombstones": nothing derived from their text may stay behind either. The
  // replay digest (an unkeyed SHA-256 of the text) served only replays by their sender, who is gone;
  // left in the row, it lets anyone with the database or a backup confirm or guess short texts.
  it("keeps nothing of the account's texts or id in the database, not even a digest of them", async () => {
    const { fan, influencer, id } = await conversation();
    const texts = ['yes', 'call me on 555 0100'];
    const mine = [await fan.sent(id, texts[0]), await fan.sent(id, texts[1])];
    await influencer.sent(id, 'reply');
    await fan.delete(mine[0]?.id as string);

    expect((await deleteAccount(fan)).statusCode).toBe(200);

    const rows = await t.db
      .selectFrom('chat_messages')
      .selectAll()
      .where(
        'id',
        'in',
        mine.map((m) => m.id),
      )
      .execute();
    expect(rows).toHaveLength(2);
    const digests = texts.map((text) => createHash('sha256').update(text).digest('base64url'));
    for (const row of rows) {
      expect(row.text).toBeNull();
      expect(digests).not.toContain(row.text_digest);
    }
    // Nor whom the peer talked to: the conversation row names the account nowhere.
    const kept = await t.db
      .selectFrom('conversations')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(kept)).not.toContain(fan.userId);
  });

  it('the peer keeps the conversation, with peer.id null and can_send false (403 cannot_message)', async () => {
    const { fan, influencer, id } = await conversation();
    await fan.sent(id, 'hello');
    await deleteAccount(fan);
    expect(await influencer.conversation(id)).toMatchObject({
      id,
      can_send: false,
      peer: { id: null, name: null, avatar_url: null, handle: null },
      unread_count: 0,
    });
    expect(errorOf(await influencer.send(id, 'anyone there?'))).toEqual([403, 'cannot_message']);
    const listed = (await influencer.get('/api/chat/conversations')).json().conversations;
    expect(listed.map((c: { id: string }) => c.id)).toContain(id);
  });

  it('an influencer who deletes the account leaves the directory; fans keep the conversation', async () => {
    const { fan, influencer, id, handle } = await conversation();
    await fan.sent(id, 'hi');
    await influencer.sent(id, 'hello fan');
    await deleteAccount(influencer);
    expect((await t.call('GET', `/api/influencers/${handle}`)).statusCode).toBe(404);
    expect(await fan.conversation(id)).toMatchObject({
      influencer_id: null,
      can_send: false,
      peer: { id: null },
      last_message: { sender_id: null, deleted: true, text: null },
    });
  });

  it('once both members are deleted, the conversation and its messages go', async () => {
    const { fan, influencer, id } = await conversation();
    await fan.sent(id, 'hi');
    await influencer.sent(id, 'hello');
    const rowsOf = async () => [
      (await t.db.selectFrom('conversations').select('id').where('id', '=', id).execute()).length,
      (
        await t.db
          .selectFrom('chat_messages')
          .select('id')
          .where('conversation_id', '=', id)
          .execute()
      ).length,
    ];
    expect((await deleteAccount(fan)).statusCode).toBe(200);
    expect(await rowsOf()).toEqual([1, 2]);
    expect((await deleteAccount(influencer)).statusCode).toBe(200);
    expect(await rowsOf()).toEqual([0, 0]);
  });

  it('a deletion that rolls back tombstones nothing and publishes nothing', async () => {
    const { fan, influencer, id } = await conversation();
    await fan.sent(id, 'kept');
    const events: BusEvent[] = [];
    await bus.subscribe(influencer.userId, (d) => events.push(d.event));
    const failing = async () => {
      throw new Error('a later hook fails');
    };
    const chatHook = tombstoneMessagesOf({ clock: t.clock.now, events: bus });
    await expect(deleteAccountRecords(t.db, fan.userId, [chatHook, failing])).rejects.toThrow();
    expect((await influencer.conversation(id)).last_message).toMatchObject({
      text: 'kept',
      sender_id: fan.userId,
    });
    expect(events).toEqual([]);
    const refused = await fan.call('DELETE', '/api/profile', { password: 'not-the-Password-1' });
    expect(refused.statusCode).toBe(400);
    expect(events).toEqual([]);
  });
});
