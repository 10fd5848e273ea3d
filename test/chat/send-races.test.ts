import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { BusEvent } from '../../src/events/bus.js';
import type * as SendRules from '../../src/chat/send-rules.js';
import type * as SendStore from '../../src/chat/send.store.js';
import type * as ChatEvents from '../../src/chat/events.js';
import { MemoryEventBus } from '../../src/events/memory-bus.js';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { creator } from '../influencer/support.js';
import { ChatClient, errorOf, newKey, openConversation, twoMembers } from './fixture.js';

/**
 * A send checks blocks and accounts before it writes; these tests hold it between the two (a
 * gate in its checks, or in its store once the clock was read) while something else commits.
 */
const gates = vi.hoisted(() => ({
  checks: undefined as Gate | undefined,
  store: undefined as Gate | undefined,
  write: undefined as Gate | undefined,
}));
interface Gate {
  entered: () => void;
  until: Promise<void>;
}

async function pass(name: keyof typeof gates) {
  const gate = gates[name];
  if (gate === undefined) return;
  gates[name] = undefined;
  gate.entered();
  await gate.until;
}

vi.mock('../../src/chat/send-rules.js', async (importOriginal) => {
  const original = await importOriginal<typeof SendRules>();
  return {
    ...original,
    sendFactsOf: async (...args: Parameters<typeof original.sendFactsOf>) => {
      const facts = await original.sendFactsOf(...args);
      await pass('checks');
      return facts;
    },
  };
});

vi.mock('../../src/chat/send.store.js', async (importOriginal) => {
  const original = await importOriginal<typeof SendStore>();
  return {
    ...original,
    storeSentMessage: async (...args: Parameters<typeof original.storeSentMessage>) => {
      await pass('store');
      return original.storeSentMessage(...args);
    },
  };
});

vi.mock('../../src/chat/events.js', async (importOriginal) => {
  const original = await importOriginal<typeof ChatEvents>();
  return {
    ...original,
    writeInVersionOrder: async (...args: Parameters<typeof original.writeInVersionOrder>) => {
      await pass('write');
      return original.writeInVersionOrder(...args);
    },
  };
});

/** Holds the next send at `name`; `inside` resolves once it waits there. */
function hold(name: keyof typeof gates) {
  let release!: () => void;
  let entered!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  const inside = new Promise<void>((resolve) => (entered = resolve));
  gates[name] = { entered, until };
  return { release, inside };
}

describe.each(backends)('a send racing what forbids it ($name)', (backend) => {
  let t: TestApp;
  const bus = new MemoryEventBus(pino({ level: 'silent' }));
  beforeAll(async () => {
    t = await TestApp.start(backend, { overrides: { events: bus } });
  });
  afterAll(() => t.close());

  /** The `message.created` events the account receives from now on. */
  async function createdEventsTo(userId: string) {
    const events: BusEvent[] = [];
    await bus.subscribe(userId, (delivery) => events.push(delivery.event));
    return () => events.filter((event) => event.type === 'message.created');
  }

  it('a block committed after its checks refuses it: no message, no event, nothing unread', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const created = await createdEventsTo(influencer.userId);
    const gate = hold('checks');
    const sending = fan.send(id, 'after the block');
    await gate.inside;
    const blocked = await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    expect(blocked.statusCode).toBe(200);
    gate.release();
    expect(errorOf(await sending)).toEqual([403, 'cannot_message']);
    const seen = await influencer.conversation(id);
    expect([seen.last_message, seen.unread_count]).toEqual([null, 0]);
    expect(created()).toEqual([]);
  });

  it("the sender's own block meanwhile: 403 user_blocked", async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const gate = hold('checks');
    const sending = fan.send(id, 'after my block');
    await gate.inside;
    expect((await fan.call('PUT', `/api/blocks/${influencer.userId}`)).statusCode).toBe(200);
    gate.release();
    expect(errorOf(await sending)).toEqual([403, 'user_blocked']);
  });

  it("the peer's account deleted meanwhile: 403 cannot_message, nothing stored", async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const gate = hold('checks');
    const sending = fan.send(id, 'to a deleted account');
    await gate.inside;
    const deleted = await influencer.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    expect(deleted.statusCode, deleted.body).toBe(200);
    gate.release();
    expect(errorOf(await sending)).toEqual([403, 'cannot_message']);
    const stored = await t.db
      .selectFrom('chat_messages')
      .select('id')
      .where('conversation_id', '=', id)
      .execute();
    expect(stored).toEqual([]);
  });

  it('an edit: a block committed after its checks refuses it, the text stays', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const sent = await fan.sent(id, 'as first written');
    const gate = hold('checks');
    const editing = fan.edit(sent.id, 'edited after the block');
    await gate.inside;
    expect((await influencer.call('PUT', `/api/blocks/${fan.userId}`)).statusCode).toBe(200);
    gate.release();
    expect(errorOf(await editing)).toEqual([403, 'cannot_message']);
    const page = (await fan.get(`/api/chat/conversations/${id}/messages`)).json();
    expect(page.messages.map((m: { text: string }) => m.text)).toEqual(['as first written']);
  });

  it('a replay still answers as the replay it is (replays come before blocks)', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const key = newKey();
    const first = await fan.send(id, 'once', key);
    expect(first.statusCode).toBe(201);
    const gate = hold('checks');
    const again = fan.send(id, 'once', key);
    await gate.inside;
    await influencer.call('PUT', `/api/blocks/${fan.userId}`);
    gate.release();
    const replay = await again;
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.json().chat_message.id).toBe(first.json().chat_message.id);
  });

  it('a message numbered after another is not timed before it (its clock was read before the wait)', async () => {
    const { fan, influencer, id } = await twoMembers(t);
    const gate = hold('store');
    const early = fan.send(id, 'read the clock first, stored second');
    await gate.inside;
    t.clock.advance(5_000);
    const late = (await influencer.send(id, 'stored first')).json().chat_message;
    gate.release();
    const stored = (await early).json().chat_message;
    expect(stored.seq).toBe(late.seq + 1);
    expect(Date.parse(stored.created_at)).toBeGreaterThanOrEqual(Date.parse(late.created_at));
    const seen = await fan.conversation(id);
    expect(seen.last_message_at).toBe(stored.created_at);
  });

  it.each(['edit', 'delete'] as const)(
    'a message %s whose conversation went meanwhile (both accounts deleted): 404, not 500',
    async (action) => {
      const { fan, influencer, id } = await twoMembers(t);
      const sent = await fan.sent(id, 'soon gone');
      const peerGone = await influencer.call('DELETE', '/api/profile', {
        password: STRONG_PASSWORD,
      });
      expect(peerGone.statusCode, peerGone.body).toBe(200);
      const gate = hold('write');
      const writing =
        action === 'edit' ? fan.edit(sent.id, 'edited into the void') : fan.delete(sent.id);
      await gate.inside;
      const gone = await fan.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
      expect(gone.statusCode, gone.body).toBe(200);
      gate.release();
      expect(errorOf(await writing)).toEqual([404, 'not_found']);
    },
  );

  /** A fan's conversation with an influencer whose DM policy is `dm_policy`, not yet answered. */
  async function request(dm_policy: 'everyone' | 'followers') {
    const made = await creator(t, { dm_policy });
    const influencer = new ChatClient(t, made.account);
    const fan = new ChatClient(t, await t.register());
    if (dm_policy === 'followers')
      expect((await fan.call('PUT', `/api/influencers/${made.id}/follow`)).statusCode).toBe(200);
    const id = await openConversation(t, fan.account, influencer.account);
    return { fan, influencer, id };
  }

  const storedIn = async (id: string) =>
    (
      await t.db
        .selectFrom('chat_messages')
        .select('id')
        .where('conversation_id', '=', id)
        .execute()
    ).length;

  it.each([
    ['everyone', "the influencer's DM policy set to nobody", 'messages_disabled'],
    ['followers', "the fan's follow removed", 'not_following'],
  ] as const)(
    '%s, and %s after its checks: 403 %s, nothing stored',
    async (policy, _meanwhile, refused) => {
      const { fan, influencer, id } = await request(policy);
      const gate = hold('checks');
      const sending = fan.send(id, 'just before the door closed');
      await gate.inside;
      const changed =
        policy === 'everyone'
          ? await influencer.call('PATCH', '/api/influencers/me', { dm_policy: 'nobody' })
          : await fan.call('DELETE', `/api/influencers/${influencer.userId}/follow`);
      expect(changed.statusCode, changed.body).toBe(200);
      gate.release();
      expect(errorOf(await sending)).toEqual([403, refused]);
      expect(await storedIn(id)).toBe(0);
    },
  );

  it("no longer binds once the influencer answered, nor the influencer's own sends: 201", async () => {
    const { fan, influencer, id } = await request('everyone');
    const gate = hold('checks');
    const answering = influencer.send(id, 'hello, fan');
    await gate.inside;
    await influencer.call('PATCH', '/api/influencers/me', { dm_policy: 'nobody' });
    gate.release();
    expect((await answering).statusCode).toBe(201);
    expect((await fan.send(id, 'thanks for answering')).statusCode).toBe(201);
  });
});
