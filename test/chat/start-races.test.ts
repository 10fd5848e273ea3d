// A start checks blocks, the profile and DM policy before it writes; these tests hold it between
// the two (a gate after its first check) while something that forbids it commits.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as SendRules from '../../src/chat/send-rules.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';
import { ChatClient, errorOf, fanAndCreator, start } from './fixture.js';

const gate = vi.hoisted(() => ({
  next: undefined as { entered: () => void; until: Promise<void> } | undefined,
}));

vi.mock('../../src/chat/send-rules.js', async (importOriginal) => {
  const original = await importOriginal<typeof SendRules>();
  return {
    ...original,
    startRefusal: async (...args: Parameters<typeof original.startRefusal>) => {
      const refusal = await original.startRefusal(...args);
      const held = gate.next;
      gate.next = undefined; // the check inside the transaction goes through
      held?.entered();
      await held?.until;
      return refusal;
    },
  };
});

/** Holds the next start after its first check; `inside` resolves once it waits there. */
function holdNextStart() {
  let release!: () => void;
  let entered!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  const inside = new Promise<void>((resolve) => (entered = resolve));
  gate.next = { entered, until };
  return { release, inside };
}

describe.each(backends)('a start racing what forbids it ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const pair = (fields?: Record<string, unknown>) => fanAndCreator(t, fields);

  const conversationsOf = (userId: string) =>
    t.db.selectFrom('conversations').select('id').where('starter_id', '=', userId).execute();

  /** Starts `fan`'s conversation, and commits `meanwhile` between its checks and its write. */
  async function startWhile(fan: ChatClient, influencerId: string, meanwhile: () => Promise<void>) {
    const held = holdNextStart();
    const starting = start(fan, influencerId);
    await held.inside;
    await meanwhile();
    held.release();
    return starting;
  }

  it('a block committed after its checks refuses it (403 cannot_message): no conversation', async () => {
    const { fan, influencer } = await pair();
    const response = await startWhile(fan, influencer.userId, async () => {
      expect((await influencer.call('PUT', `/api/blocks/${fan.userId}`)).statusCode).toBe(200);
    });
    expect(errorOf(response)).toEqual([403, 'cannot_message']);
    expect(await conversationsOf(fan.userId)).toEqual([]);
  });

  // A start that creates nothing (it lost its pair's race, or was refused inside its transaction)
  // gives its slot of the 20 new conversations an hour back.
  async function openInfluencers(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await creator(t, { dm_policy: 'everyone' })).id);
    return ids;
  }

  it('the loser of two starts of one pair (200) leaves 19 more new conversations', async () => {
    const fan = new ChatClient(t, await t.register());
    const [first, ...others] = await openInfluencers(20);
    const loser = await startWhile(fan, first as string, async () => {
      expect((await start(fan, first as string)).statusCode).toBe(201);
    });
    expect(loser.statusCode).toBe(200);
    for (const id of others) expect((await start(fan, id)).statusCode).toBe(201);
  });

  it('a start refused by a block committed after its checks leaves all 20', async () => {
    const fan = new ChatClient(t, await t.register());
    const [blocker, ...others] = await openInfluencers(21);
    const refused = await startWhile(fan, blocker as string, async () => {
      expect((await fan.call('PUT', `/api/blocks/${blocker as string}`)).statusCode).toBe(200);
    });
    expect(errorOf(refused)).toEqual([403, 'user_blocked']);
    for (const id of others) expect((await start(fan, id)).statusCode).toBe(201);
  });

  it('the influencer profile deleted meanwhile: 404, and no conversation (its DM policy would no longer bind)', async () => {
    const { fan, influencer } = await pair();
    const response = await startWhile(fan, influencer.userId, async () => {
      expect((await influencer.call('DELETE', '/api/influencers/me')).statusCode).toBe(200);
    });
    expect(errorOf(response)).toEqual([404, 'not_found']);
    expect(await conversationsOf(fan.userId)).toEqual([]);
  });

  it("DM policy changed to 'nobody' meanwhile: 403 messages_disabled", async () => {
    const { fan, influencer } = await pair();
    const response = await startWhile(fan, influencer.userId, async () => {
      const changed = await influencer.call('PATCH', '/api/influencers/me', {
        dm_policy: 'nobody',
      });
      expect(changed.statusCode).toBe(200);
    });
    expect(errorOf(response)).toEqual([403, 'messages_disabled']);
    expect(await conversationsOf(fan.userId)).toEqual([]);
  });

  it('what changed back before the write does not refuse it: 201', async () => {
    const { fan, influencer } = await pair();
    const response = await startWhile(fan, influencer.userId, async () => {
      await influencer.call('PUT', `/api/blocks/${fan.userId}`);
      await influencer.call('DELETE', `/api/blocks/${fan.userId}`);
    });
    expect(response.statusCode).toBe(201);
  });
});
