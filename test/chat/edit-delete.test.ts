import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { legacyTextDigest } from '../../src/chat/message-text.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { errorOf, twoMembers } from './fixture.js';

const MINUTE = 60_000;

describe.each(backends)('editing and deleting messages ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('the author edits within 15 minutes: text, edited_at and version change', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'draft');
    // 30 s inside the window: the test clock moves with real time too (two refreshes, the edit).
    t.clock.advance(15 * MINUTE - 30_000);
    await fan.renewToken();
    await influencer.renewToken();
    const response = await fan.edit(sent.id, 'final\u0065\u0301');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.message).toBe('Message edited');
    expect(body.chat_message).toMatchObject({
      id: sent.id,
      seq: 1,
      text: 'final\u00e9',
      version: 2,
      deleted: false,
      client_message_id: sent.client_message_id,
    });
    expect(Date.parse(body.chat_message.edited_at)).toBeGreaterThan(Date.parse(sent.created_at));
    expect((await influencer.conversation(id)).last_message?.text).toBe('final\u00e9');
  });

  it('after 15 minutes an edit is 403 edit_window_expired', async () => {
    const { fan, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'old');
    t.clock.advance(15 * MINUTE + 1_000);
    await fan.renewToken();
    expect(errorOf(await fan.edit(sent.id, 'too late'))).toEqual([403, 'edit_window_expired']);
    expect((await fan.conversation(id)).version).toBe(1);
  });

  it('the edit window runs from sending, not from the last edit', async () => {
    const { fan, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'first');
    t.clock.advance(10 * MINUTE);
    expect((await fan.edit(sent.id, 'second')).statusCode).toBe(200);
    t.clock.advance(10 * MINUTE);
    await fan.renewToken();
    expect(errorOf(await fan.edit(sent.id, 'third'))).toEqual([403, 'edit_window_expired']);
  });

  it('only the author edits or deletes: the peer gets 403 not_message_author', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'mine');
    expect(errorOf(await influencer.edit(sent.id, 'yours?'))).toEqual([403, 'not_message_author']);
    expect(errorOf(await influencer.delete(sent.id))).toEqual([403, 'not_message_author']);
    expect((await fan.conversation(id)).last_message).toMatchObject({ text: 'mine', version: 1 });
  });

  it('a deleted message cannot be edited: 409 message_deleted', async () => {
    const { fan, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'gone soon');
    await fan.delete(sent.id);
    expect(errorOf(await fan.edit(sent.id, 'back?'))).toEqual([409, 'message_deleted']);
  });

  it('an edit is validated like a send, after membership', async () => {
    const { fan, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'valid');
    for (const text of ['', '   ', 'a\u0007b', 'x'.repeat(2001)]) {
      const response = await fan.edit(sent.id, text);
      expect(response.json()).toMatchObject({
        error: 'validation_failed',
        details: [{ field: 'text' }],
      });
    }
    expect((await fan.call('PATCH', `/api/chat/messages/${sent.id}`, {})).statusCode).toBe(400);
  });

  it('delete leaves a tombstone with its seq; repeating it answers the same tombstone', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const first = await fan.sent(id, 'one');
    await fan.sent(id, 'two');
    const deleted = await fan.delete(first.id);
    expect(deleted.statusCode).toBe(200);
    const tombstone = deleted.json();
    expect(tombstone.message).toBe('Message deleted');
    expect(tombstone.chat_message).toMatchObject({
      id: first.id,
      seq: 1,
      text: null,
      deleted: true,
      version: 3,
      sender_id: fan.userId,
    });
    t.clock.advance(MINUTE);
    const again = await fan.delete(first.id);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(tombstone);
    const page = (await influencer.get(`/api/chat/conversations/${id}/messages`)).json();
    expect(page.messages.map((m: { seq: number; text: string | null }) => [m.seq, m.text])).toEqual(
      [
        [1, null],
        [2, 'two'],
      ],
    );
    expect(page.messages[0]).not.toHaveProperty('client_message_id');
  });

  // A deleted message has `text: null`, and an edited one its new text only: what the row keeps to
  // recognise a replay of the first text must not let whoever reads the database (or a backup)
  // check guesses at the text (an unkeyed SHA-256 of "yes" or of a phone number is looked up at
  // once). A replay still answers as before.
  // Messages sent before keyed digests carry an unkeyed one (legacyTextDigest) until then.
  it.each([
    ['sent now', false],
    ['sent before keyed digests', true],
  ])(
    'keeps no unkeyed digest of a deleted or edited-away text, and replays still answer 200 (%s)',
    async (_, before) => {
      const { fan, id } = await twoMembers(t);
      const deleted = await fan.sent(id, 'yes');
      const edited = await fan.sent(id, 'call me on 555 0100');
      if (before) {
        for (const [message, text] of [
          [deleted, 'yes'],
          [edited, 'call me on 555 0100'],
        ] as const) {
          await t.db
            .updateTable('chat_messages')
            .set({ text_digest: legacyTextDigest(text) })
            .where('id', '=', message.id)
            .execute();
        }
      }
      expect((await fan.delete(deleted.id)).statusCode).toBe(200);
      expect((await fan.edit(edited.id, 'never mind')).statusCode).toBe(200);

      const rows = await t.db
        .selectFrom('chat_messages')
        .select(['id', 'text', 'text_digest'])
        .where('id', 'in', [deleted.id, edited.id])
        .orderBy('seq')
        .execute();
      expect(rows.map((r) => r.text)).toEqual([null, 'never mind']);
      expect(rows[0]?.text_digest).not.toBe(legacyTextDigest('yes'));
      expect(rows[1]?.text_digest).not.toBe(legacyTextDigest('call me on 555 0100'));

      const replays = [
        await fan.send(id, 'yes', deleted.client_message_id),
        await fan.send(id, 'call me on 555 0100', edited.client_message_id),
      ];
      expect(replays.map((r) => [r.statusCode, r.headers['idempotent-replayed']])).toEqual([
        [200, 'true'],
        [200, 'true'],
      ]);
      expect(errorOf(await fan.send(id, 'no', deleted.client_message_id))).toEqual([
        422,
        'idempotency_key_reused',
      ]);
    },
  );

  it('concurrent deletes of one message raise the version once', async () => {
    const { fan, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'race');
    const responses = await Promise.all(Array.from({ length: 8 }, () => fan.delete(sent.id)));
    expect(responses.map((r) => r.statusCode)).toEqual(Array(8).fill(200));
    expect(new Set(responses.map((r) => r.body)).size).toBe(1);
    expect((await fan.conversation(id)).version).toBe(2);
  });

  it('an edit racing a delete: the message ends deleted, and versions stay consecutive', async () => {
    const { fan, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'race');
    const [edit, remove] = await Promise.all([fan.edit(sent.id, 'edited'), fan.delete(sent.id)]);
    expect(remove.statusCode).toBe(200);
    expect([200, 409]).toContain(edit.statusCode);
    const conversation = await fan.conversation(id);
    expect(conversation.version).toBe(edit.statusCode === 200 ? 3 : 2);
    expect(conversation.last_message).toMatchObject({
      deleted: true,
      version: conversation.version,
    });
  });

  it('deleting is allowed under a block, editing is not', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const mine = await fan.sent(id, 'a');
    const theirs = await influencer.sent(id, 'b');
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    expect(errorOf(await fan.edit(mine.id, 'a2'))).toEqual([403, 'cannot_message']);
    expect(errorOf(await influencer.edit(theirs.id, 'b2'))).toEqual([403, 'user_blocked']);
    expect((await fan.delete(mine.id)).statusCode).toBe(200);
    expect((await influencer.delete(theirs.id)).statusCode).toBe(200);
  });
});
