import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { follow } from '../influencer/support.js';
import {
  ChatClient,
  errorOf,
  fanAndCreator,
  newKey,
  openConversation,
  start,
  twoMembers,
} from './fixture.js';

describe.each(backends)('sending messages ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const storedCount = async (conversationId: string) =>
    (
      await t.db
        .selectFrom('chat_messages')
        .select('id')
        .where('conversation_id', '=', conversationId)
        .execute()
    ).length;

  describe('values', () => {
    it.each([
      ['empty', ''],
      ['only white space', ' \n\t\u00a0 '],
      ['only invisible characters', '\u200b\u200d\u2060 \u200b'],
      ['only a Hangul filler, a letter that shows nothing', '\u3164'],
      ['only the Braille blank', '\u2800 \u2800'],
      ['2001 code points', '😀'.repeat(2001)],
      ['a control character', 'a\u0000b'],
      ['a carriage return', 'a\rb'],
      ['a C1 control character', 'a\u0085b'],
      ['a lone surrogate', 'a\ud800b'],
    ])('text with %s is 400 validation_failed on text, and stores nothing', async (_, text) => {
      const { fan, id } = await twoMembers(t);
      const response = await fan.send(id, text);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        error: 'validation_failed',
        details: [{ field: 'text' }],
      });
      expect(await storedCount(id)).toBe(0);
    });

    it('accepts 2000 code points (astral ones too), \\n and \\t, and stores the NFC form', async () => {
      const { fan, id } = await twoMembers(t);
      expect((await fan.sent(id, '😀'.repeat(2000))).text).toHaveLength(4000);
      // 2000 decomposed characters are 4000 code points, 2000 after NFC.
      const decomposed = 'e\u0301'.repeat(2000);
      expect((await fan.sent(id, decomposed)).text).toBe('\u00e9'.repeat(2000));
      expect((await fan.sent(id, 'line one\n\tline two')).text).toBe('line one\n\tline two');
      // A private-use character; a spacing and an enclosing mark alone (ा, ⃝) take room too.
      for (const shows of ['👍', '…', '\u200b.', '\ue000', '\u093e', '\u20dd'])
        expect((await fan.sent(id, shows)).text).toBe(shows);
    });

    it.each(['', 'a'.repeat(65), 'has space', 'ünï', 'a/b', 'a.b'])(
      'client_message_id %j is 400 validation_failed',
      async (key) => {
        const { fan, id } = await twoMembers(t);
        const response = await fan.send(id, 'hello', key);
        expect(response.statusCode).toBe(400);
        // In words, never the regular expression.
        expect(response.json().details).toEqual([
          {
            field: 'client_message_id',
            message: 'must be 1–64 letters (A–Z, a–z), digits, "_" or "-"',
          },
        ]);
      },
    );

    it('missing or wrongly typed fields are 400, each listed', async () => {
      const { fan, id } = await twoMembers(t);
      const url = `/api/chat/conversations/${id}/messages`;
      const missing = await fan.call('POST', url, {});
      expect(
        missing
          .json()
          .details.map((d: { field: string }) => d.field)
          .sort(),
      ).toEqual(['client_message_id', 'text']);
      const wrong = await fan.call('POST', url, { client_message_id: 7, text: ['a'] });
      expect(wrong.statusCode).toBe(400);
      expect(await storedCount(id)).toBe(0);
    });
  });

  describe('exactly once', () => {
    it('a replay answers 200 with the stored message and Idempotent-Replayed: true', async () => {
      const { fan, id } = await twoMembers(t);
      const key = newKey();
      const first = await fan.send(id, 'once', key);
      expect(first.statusCode).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await fan.send(id, 'once', key);
      expect(again.statusCode).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
      expect(await storedCount(id)).toBe(1);
    });

    it('the same key with another text or in another conversation is 422 and stores nothing', async () => {
      const { fan, influencer, id } = await twoMembers(t);
      const other = await openConversation(t, fan.account, await t.register());
      const key = newKey();
      expect((await fan.send(id, 'original', key)).statusCode).toBe(201);
      const otherText = await fan.send(id, 'different', key);
      expect(errorOf(otherText)).toEqual([422, 'idempotency_key_reused']);
      const otherConversation = await fan.send(other, 'original', key);
      expect(errorOf(otherConversation)).toEqual([422, 'idempotency_key_reused']);
      expect(await storedCount(id)).toBe(1);
      expect(await storedCount(other)).toBe(0);
      // Keys are per sender: the peer may use the same one.
      expect((await influencer.send(id, 'original', key)).statusCode).toBe(201);
    });

    it('a replay compares with the text first sent, edits and deletion aside', async () => {
      const { fan, id } = await twoMembers(t);
      const key = newKey();
      const sent = (await fan.send(id, 'first text', key)).json().chat_message;
      expect((await fan.edit(sent.id, 'edited text')).statusCode).toBe(200);
      const afterEdit = await fan.send(id, 'first text', key);
      expect(afterEdit.statusCode).toBe(200);
      expect(afterEdit.json().chat_message.text).toBe('edited text');
      expect(errorOf(await fan.send(id, 'edited text', key))).toEqual([
        422,
        'idempotency_key_reused',
      ]);
      await fan.delete(sent.id);
      const afterDelete = await fan.send(id, 'first text', key);
      expect(afterDelete.statusCode).toBe(200);
      expect(afterDelete.json().chat_message).toMatchObject({ deleted: true, text: null });
    });

    it('20 concurrent sends with one key store one message: one 201, the rest 200', async () => {
      const { fan, id } = await twoMembers(t);
      const key = newKey();
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => fan.send(id, 'at once', key)),
      );
      const statuses = responses.map((r) => r.statusCode).sort();
      expect(statuses).toEqual([...Array<number>(19).fill(200), 201]);
      const ids = new Set(responses.map((r) => r.json().chat_message.id));
      expect(ids.size).toBe(1);
      for (const r of responses.filter((r) => r.statusCode === 200))
        expect(r.headers['idempotent-replayed']).toBe('true');
      expect(await storedCount(id)).toBe(1);
      expect((await fan.conversation(id)).last_seq).toBe(1);
    });

    it('concurrent sends of one key to two conversations store one message', async () => {
      const { fan, id } = await twoMembers(t);
      const other = await openConversation(t, fan.account, await t.register());
      const key = newKey();
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) => fan.send(i % 2 ? id : other, 'race', key)),
      );
      const statuses = responses.map((r) => r.statusCode);
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.every((s) => [200, 201, 422].includes(s))).toBe(true);
      expect((await storedCount(id)) + (await storedCount(other))).toBe(1);
    });
  });

  it('a replay after a restart of the service still answers 200', async () => {
    const database = await backend.provision();
    const before = await TestApp.start(database);
    const fan = new ChatClient(before, await before.register());
    const id = await openConversation(before, fan.account, await before.register());
    const first = await fan.send(id, 'survives a restart', 'restart-key');
    expect(first.statusCode).toBe(201);
    await before.close();
    const after = await TestApp.start(database);
    try {
      const again = await new ChatClient(after, fan.account).send(
        id,
        'survives a restart',
        'restart-key',
      );
      expect(again.statusCode).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
    } finally {
      await after.close();
      await database.drop();
    }
  });

  describe('the order of the checks', () => {
    it('validation comes before the replay', async () => {
      const { fan, id } = await twoMembers(t);
      const key = newKey();
      await fan.sent(id, 'x');
      expect((await fan.send(id, 'hello', key)).statusCode).toBe(201);
      expect(errorOf(await fan.send(id, '   ', key))).toEqual([400, 'validation_failed']);
    });

    it('a replay comes before blocks and limits', async () => {
      const { fan, influencer, id } = await twoMembers(t);
      const key = newKey();
      expect((await fan.send(id, 'before the block', key)).statusCode).toBe(201);
      await influencer.call('PUT', `/api/blocks/${fan.userId}`);
      expect(errorOf(await fan.send(id, 'new'))).toEqual([403, 'cannot_message']);
      expect((await fan.send(id, 'before the block', key)).statusCode).toBe(200);
    });

    it('blocks come before the limits', async () => {
      const { fan, influencer, id } = await twoMembers(t);
      for (let i = 0; i < 10; i++) await fan.sent(id, `m${i}`);
      expect(errorOf(await fan.send(id, 'one too many'))).toEqual([429, 'rate_limited']);
      await fan.call('PUT', `/api/blocks/${influencer.userId}`);
      expect(errorOf(await fan.send(id, 'blocked'))).toEqual([403, 'user_blocked']);
    });

    it('blocks come before DM policy, in a send and in a start', async () => {
      const { fan, influencer } = await fanAndCreator(t, { dm_policy: 'followers' });
      await follow(t, fan.account, influencer.userId);
      const id = (await start(fan, influencer.userId)).json().conversation.id as string;
      await fan.sent(id, 'hi'); // pending: the policy binds the fan
      // The block also removes the follow: the block and the policy both refuse the fan now.
      await influencer.call('PUT', `/api/blocks/${fan.userId}`);
      expect(errorOf(await fan.send(id, 'blocked?'))).toEqual([403, 'cannot_message']);
      await influencer.call('DELETE', `/api/blocks/${fan.userId}`);
      await fan.call('PUT', `/api/blocks/${influencer.userId}`);
      expect(errorOf(await fan.send(id, 'blocked?'))).toEqual([403, 'user_blocked']);

      const other = await fanAndCreator(t, { dm_policy: 'nobody' });
      await other.influencer.call('PUT', `/api/blocks/${other.fan.userId}`);
      expect(errorOf(await start(other.fan, other.influencer.userId))).toEqual([
        403,
        'cannot_message',
      ]);
    });
  });
});
