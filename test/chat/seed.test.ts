import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { resolveAppSecret } from '../../src/security/server-keys.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { seedChat, signAccessTokens, type ChatPlan, type SeededChat } from './seed.js';

/**
 * The chat benchmark's seeder (bench/chat.mjs): what it writes straight into the database is a
 * state the service itself serves, and the tokens it signs authenticate.
 */
const PLAN: ChatPlan = {
  senders: 6,
  conversationsPerSender: 3,
  historyMessages: 120,
  listUsers: 2,
  conversationsPerListUser: 5,
};

describe.each(backends)('chat benchmark seed ($name)', (backend) => {
  let t: TestApp;
  let seeded: SeededChat;
  let tokens: Map<string, string>;
  const tokenOf = (member: { sessionId: string }) => tokens.get(member.sessionId) as string;
  const get = (url: string, member: { sessionId: string }) =>
    t.call('GET', url, { token: tokenOf(member) });

  beforeAll(async () => {
    t = await TestApp.start(backend);
    // Any registration starts the service's signing key; its hash stands for the shared one.
    await t.register();
    const config = loadConfig(t.backend.env);
    seeded = await seedChat(t.db, PLAN, `not a hash of ${STRONG_PASSWORD}`);
    const members = [
      ...seeded.sides.map((side) => side.member),
      ...seeded.history.members,
      ...seeded.listUsers,
    ];
    tokens = await signAccessTokens(
      t.db,
      { appSecret: resolveAppSecret(config), issuer: config.publicUrl },
      members,
    );
  });
  afterAll(() => t.close());

  it('lists every side of every sending conversation once, never one conversation twice in a row', () => {
    const { sides } = seeded;
    expect(sides).toHaveLength(2 * PLAN.senders * PLAN.conversationsPerSender);
    const keys = new Set(sides.map((s) => `${s.conversationId}:${s.member.userId}`));
    expect(keys.size).toBe(sides.length);
    for (let i = 1; i < sides.length; i++)
      expect(sides[i]?.conversationId).not.toBe(sides[i - 1]?.conversationId);
    const perMember = new Map<string, number>();
    for (const s of sides)
      perMember.set(s.member.userId, (perMember.get(s.member.userId) ?? 0) + 1);
    expect(new Set(perMember.values())).toEqual(new Set([PLAN.conversationsPerSender]));
  });

  it('signs tokens that authenticate as the seeded accounts', async () => {
    const member = seeded.listUsers[0] as SeededChat['listUsers'][number];
    const response = await get('/api/profile', member);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().user.id).toBe(member.userId);
  });

  it('lets both sides of a seeded conversation send, after its two seeded messages', async () => {
    const [fanSide, influencerSide] = seeded.sides;
    for (const side of [fanSide, influencerSide]) {
      if (side === undefined) throw new Error('no sending side');
      const response = await t.post(
        `/api/chat/conversations/${side.conversationId}/messages`,
        { client_message_id: `seed-test-${side.member.userId}`, text: 'hello' },
        { token: tokenOf(side.member) },
      );
      expect(response.statusCode, response.body).toBe(201);
      expect(response.json().chat_message.seq).toBe(3);
    }
  });

  it('serves the newest page of the long conversation', async () => {
    const { conversationId, members } = seeded.history;
    const response = await get(
      `/api/chat/conversations/${conversationId}/messages`,
      members[0] as SeededChat['listUsers'][number],
    );
    expect(response.statusCode, response.body).toBe(200);
    const page = response.json();
    expect(page.last_seq).toBe(PLAN.historyMessages);
    expect(page.has_more).toBe(true);
    expect(page.messages.map((m: { seq: number }) => m.seq)).toEqual(
      Array.from({ length: 50 }, (_, i) => PLAN.historyMessages - 49 + i),
    );
  });

  it('gives each list user its conversations, with unread counts that add up', async () => {
    for (const [i, user] of seeded.listUsers.entries()) {
      const influencer = i % 2 === 0;
      const list = await get('/api/chat/conversations?limit=100', user);
      expect(list.statusCode, list.body).toBe(200);
      const conversations: {
        unread_count: number;
        can_send: boolean;
        accepted: boolean;
        last_message: unknown;
      }[] = list.json().conversations;
      expect(conversations).toHaveLength(PLAN.conversationsPerListUser);
      expect(conversations.every((c) => c.last_message !== null)).toBe(true);
      // A fan who follows nobody may send only where the influencer has answered.
      expect(conversations.every((c) => c.can_send === (influencer || c.accepted))).toBe(true);
      const unread = (await get('/api/chat/unread', user)).json();
      const sum = conversations.reduce((total, c) => total + c.unread_count, 0);
      expect(unread.total_unread_count).toBe(sum);
    }
  });
});
