import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findMembership } from '../../src/chat/membership.js';
import { markRead } from '../../src/chat/reading.js';
import type { ServiceContext } from '../../src/context.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { ChatClient, openConversation, twoMembers } from './fixture.js';

describe.each(backends)('unread counts ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it("counts the peer's messages above last_read_seq; one's own never count", async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.sent(id, 'one');
    await fan.sent(id, 'two');
    expect((await influencer.conversation(id)).unread_count).toBe(2);
    const own = await fan.conversation(id);
    expect([own.unread_count, own.last_read_seq]).toEqual([0, 2]);
    // Sending marks one's own side read.
    await influencer.sent(id, 'three');
    expect(await influencer.conversation(id)).toMatchObject({ unread_count: 0, last_read_seq: 3 });
    expect(await fan.conversation(id)).toMatchObject({ unread_count: 1, last_read_seq: 2 });
  });

  it('deleting an unread message lowers the count', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const first = await fan.sent(id, 'one');
    await fan.sent(id, 'two');
    expect((await influencer.unread()).total_unread_count).toBe(2);
    await fan.delete(first.id);
    expect((await influencer.conversation(id)).unread_count).toBe(1);
    expect((await influencer.unread()).total_unread_count).toBe(1);
  });

  it("a read whose reader's account is deleted after its membership was found answers 404", async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await influencer.sent(id, 'one');
    const membership = await findMembership(t.db, fan.userId, id);
    const deleted = await fan.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    expect(deleted.statusCode).toBe(200);
    // markRead reads only the database; the rest of the context is not reached on this path.
    const ctx = { db: t.db } as unknown as ServiceContext;
    await expect(markRead(ctx, membership, undefined)).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });

  it('concurrent reads each answer a pair that held at one moment (unread = peer messages above it)', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const MESSAGES = 10; // the most one conversation takes in 10 s
    for (let i = 0; i < MESSAGES; i++) await fan.sent(id, `m${i}`);
    const seqs = Array.from({ length: MESSAGES }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
    const answers = await Promise.all(seqs.map((seq) => influencer.read(id, seq)));
    for (const [i, answer] of answers.entries()) {
      expect(answer.last_read_seq).toBeGreaterThanOrEqual(seqs[i] as number);
      expect(answer.unread_count, JSON.stringify(answer)).toBe(MESSAGES - answer.last_read_seq);
    }
  });

  it('read marks up to seq (default last_seq) and never moves back', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    for (const text of ['a', 'b', 'c', 'd']) await fan.sent(id, text);
    expect(await influencer.read(id, 2)).toEqual({ last_read_seq: 2, unread_count: 2 });
    expect(await influencer.read(id, 1)).toEqual({ last_read_seq: 2, unread_count: 2 });
    expect(await influencer.read(id, 0)).toEqual({ last_read_seq: 2, unread_count: 2 });
    expect(await influencer.read(id)).toEqual({ last_read_seq: 4, unread_count: 0 });
    expect(await influencer.read(id, 3)).toEqual({ last_read_seq: 4, unread_count: 0 });
  });

  it('read beyond last_seq is 400 validation_failed on seq and changes nothing', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.sent(id, 'a');
    const url = `/api/chat/conversations/${id}/read`;
    for (const seq of [2, 2 ** 31 - 1]) {
      const response = await influencer.call('POST', url, { seq });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({
        error: 'validation_failed',
        details: [{ field: 'seq' }],
      });
    }
    for (const seq of [-1, 1.5, '1', null, 2 ** 31]) {
      expect((await influencer.call('POST', url, { seq })).statusCode).toBe(400);
    }
    expect((await influencer.conversation(id)).last_read_seq).toBe(0);
  });

  it('a read changes no version', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.sent(id, 'a');
    await influencer.read(id);
    expect((await influencer.conversation(id)).version).toBe(1);
  });

  it('/api/chat/unread is the sum over the conversations, and counts those with any', async () => {
    const influencer = new ChatClient(t, await t.register());
    const fans = [];
    for (let i = 0; i < 3; i++) {
      const fan = new ChatClient(t, await t.register());
      fans.push({ fan, id: await openConversation(t, fan.account, influencer.account) });
    }
    expect(await influencer.unread()).toEqual({ total_unread_count: 0, unread_conversations: 0 });
    for (const [i, { fan, id }] of fans.entries()) {
      for (let n = 0; n <= i; n++) await fan.sent(id, `from fan ${i}, message ${n}`);
    }
    expect(await influencer.unread()).toEqual({ total_unread_count: 6, unread_conversations: 3 });
    const [first, second] = fans;
    await influencer.read(first?.id as string);
    await influencer.read(second?.id as string, 1);
    expect(await influencer.unread()).toEqual({ total_unread_count: 4, unread_conversations: 2 });
    const counts = await Promise.all(fans.map(({ id }) => influencer.conversation(id)));
    expect(counts.map((c) => c.unread_count)).toEqual([0, 1, 3]);
    // The fans' own side: nothing unread.
    expect(await first?.fan.unread()).toEqual({ total_unread_count: 0, unread_conversations: 0 });
  });
});
