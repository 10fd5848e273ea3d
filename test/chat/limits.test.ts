import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { ChatClient, newKey, openConversation, twoMembers } from './fixture.js';

describe.each(backends)('chat limits ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const storedBy = async (userId: string) =>
    (await t.db.selectFrom('chat_messages').select('id').where('sender_id', '=', userId).execute())
      .length;

  it('10 sends per 10 s per user and conversation, then 429 with Retry-After; stores nothing', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    for (let i = 0; i < 10; i++) await fan.sent(id, `m${i}`);
    const refused = await fan.send(id, 'eleventh');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error).toBe('rate_limited');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10);
    expect(await storedBy(fan.userId)).toBe(10);
    expect((await fan.conversation(id)).last_seq).toBe(10);
    // The peer has its own budget; and the window slides.
    await influencer.sent(id, 'reply');
    t.clock.advance(10_000);
    await fan.renewToken();
    await fan.sent(id, 'after the window');
  });

  it('60 sends a minute per user over all conversations', async () => {
    const fan = new ChatClient(t, await t.register());
    const conversations: string[] = [];
    for (let i = 0; i < 7; i++)
      conversations.push(await openConversation(t, fan.account, await t.register()));
    for (let i = 0; i < 60; i++) await fan.sent(conversations[i % 7] as string, `m${i}`);
    const refused = await fan.send(conversations[6] as string, 'sixty-first');
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(await storedBy(fan.userId)).toBe(60);
  });

  it('replays count against no limit, even at the limit', async () => {
    const { fan, id } = await twoMembers(t);
    const key = newKey();
    expect((await fan.send(id, 'first', key)).statusCode).toBe(201);
    for (let i = 0; i < 9; i++) await fan.sent(id, `m${i}`);
    expect((await fan.send(id, 'over')).statusCode).toBe(429);
    for (let i = 0; i < 5; i++) expect((await fan.send(id, 'first', key)).statusCode).toBe(200);
  });

  it('replays do not use up the budget', async () => {
    const { fan, id } = await twoMembers(t);
    const key = newKey();
    await fan.send(id, 'once', key);
    for (let i = 0; i < 20; i++) await fan.send(id, 'once', key);
    for (let i = 0; i < 9; i++) await fan.sent(id, `m${i}`);
    expect((await fan.send(id, 'over')).statusCode).toBe(429);
  });

  it('a replay after its key claim has lapsed (over a minute later) spends no slot either', async () => {
    const { fan, id } = await twoMembers(t);
    const key = newKey();
    expect((await fan.send(id, 'long ago', key)).statusCode).toBe(201);
    // Past the one-minute key claim and both send windows: the replay begins as a first send.
    t.clock.advance(61_000);
    await fan.renewToken();
    for (let i = 0; i < 5; i++) {
      const replay = await fan.send(id, 'long ago', key);
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
    }
    for (let i = 0; i < 10; i++) await fan.sent(id, `m${i}`);
    expect((await fan.send(id, 'over')).statusCode).toBe(429);
  });

  it.runIf(backend.name.includes('redis'))('counts in Redis when it is configured', async () => {
    const { fan, id } = await twoMembers(t);
    for (let i = 0; i < 3; i++) await fan.sent(id, `m${i}`);
    const redis = new Redis(t.backend.env.REDIS_URL as string);
    const keys = `${t.backend.env.REDIS_PREFIX ?? ''}limits:chat-sends:${fan.userId}`;
    try {
      expect(await redis.zcard(`${keys}:${id}`)).toBe(3);
      expect(await redis.zcard(keys)).toBe(3);
    } finally {
      redis.disconnect();
    }
  });
});
