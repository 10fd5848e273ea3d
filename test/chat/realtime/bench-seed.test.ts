import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error -- the benchmark is plain JavaScript (JSDoc types), outside the TypeScript build
import { PUBLIC_URL, seedPopulation } from '../../../bench/realtime/seed.mjs';
import { backends } from '../../helpers/backends.js';
import { TestApp } from '../../helpers/test-app.js';

/**
 * The real-time benchmark's seeder (bench/realtime/seed.mjs), which writes its population
 * straight into the database through the service's store functions: what it writes is a state
 * the service serves, and the tokens it signs authenticate. It once broke silently when a store
 * function it calls was removed; this test fails instead.
 */
interface Member {
  userId: string;
  sessionId: string;
  conversationId: string;
  peerId: string;
  role: 'fan' | 'influencer';
}
interface Population {
  members: Member[];
  conversations: number;
  mintTokens(members: Member[]): Promise<string[]>;
  close(): Promise<void>;
}

const ACCOUNTS = 6;

describe.each(backends)('real-time benchmark seed ($name)', (backend) => {
  let t: TestApp;
  let population: Population;
  let tokens: string[];

  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { PUBLIC_URL } });
    await t.register(); // starts the service's signing key, which the seeder signs with
    const url = t.backend.env.DATABASE_URL as string;
    const sqlite = url.startsWith('sqlite:');
    population = (await seedPopulation(
      {
        kind: sqlite ? 'sqlite' : 'postgres',
        url,
        env: t.backend.env,
        // Where the service keeps its generated APP_SECRET on SQLite: beside the database file.
        workDir: sqlite ? dirname(url.slice('sqlite:'.length)) : '',
        drop: async () => undefined,
      },
      ACCOUNTS,
    )) as Population;
    tokens = await population.mintTokens(population.members);
  }, 60_000);
  afterAll(async () => {
    await population?.close();
    await t?.close();
  });

  it('pairs every fan with one influencer in one conversation', () => {
    const { members } = population;
    expect(members).toHaveLength(ACCOUNTS);
    expect(population.conversations).toBe(ACCOUNTS / 2);
    for (let i = 0; i < members.length; i += 2) {
      const [fan, influencer] = [members[i] as Member, members[i + 1] as Member];
      expect([fan.role, influencer.role]).toEqual(['fan', 'influencer']);
      expect(fan.conversationId).toBe(influencer.conversationId);
      expect([fan.peerId, influencer.peerId]).toEqual([influencer.userId, fan.userId]);
    }
  });

  it('signs tokens that authenticate as the seeded accounts; each fan lists the conversation it started', async () => {
    for (const [i, member] of population.members.entries()) {
      const response = await t.call('GET', '/api/chat/conversations', { token: tokens[i] });
      expect(response.statusCode, response.body).toBe(200);
      const listed = response.json().conversations as { id: string; peer: { id: string } }[];
      // Without messages, a conversation is listed only to the member who started it.
      const expected = member.role === 'fan' ? [[member.conversationId, member.peerId]] : [];
      expect(listed.map((c) => [c.id, c.peer.id])).toEqual(expected);
    }
  });

  it('lets both members send at once: the conversation is accepted, DM policy binds neither', async () => {
    for (const [i, member] of population.members.slice(0, 2).entries()) {
      const response = await t.post(
        `/api/chat/conversations/${member.conversationId}/messages`,
        { client_message_id: `bench-seed-${i}`, text: 'hello' },
        { token: tokens[i] },
      );
      expect(response.statusCode, response.body).toBe(201);
    }
  });
});
