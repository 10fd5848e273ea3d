import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as SendStore from '../../src/chat/send.store.js';
import { MemoryEventBus } from '../../src/events/memory-bus.js';
import { backends } from '../helpers/backends.js';
import { LockHolder } from '../helpers/lock-waits.js';
import { STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';
import { errorOf, twoMembers } from './fixture.js';

/**
 * An account deletion turns the account's messages into tombstones, each a `message.deleted` with
 * its conversation's next version. Other writes of the conversation on the same instance wait for
 * it, so the peer gets every event in version order. PostgreSQL only: there the writes of one
 * conversation queue on its row and come back on separate connections, in any order.
 */
const postgres = backends.find((backend) => backend.name.startsWith('postgres'));

/** Holds the next send at its write, in JavaScript: under way for the ordering, holding no lock. */
const gate = vi.hoisted(() => ({
  armed: undefined as undefined | { entered: () => void; until: Promise<void> },
}));
vi.mock('../../src/chat/send.store.js', async (importOriginal) => {
  const original = await importOriginal<typeof SendStore>();
  return {
    ...original,
    storeSentMessage: async (...args: Parameters<typeof original.storeSentMessage>) => {
      const armed = gate.armed;
      gate.armed = undefined;
      if (armed !== undefined) {
        armed.entered();
        await armed.until;
      }
      return original.storeSentMessage(...args);
    },
  };
});

function holdNextSend() {
  let release!: () => void;
  let entered!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  const inside = new Promise<void>((resolve) => (entered = resolve));
  gate.armed = { entered, until };
  return { release, inside };
}

describe.skipIf(postgres === undefined)('deletion events in version order', () => {
  let t: TestApp;
  let holder: LockHolder;
  const bus = new MemoryEventBus(pino({ level: 'silent' }));
  beforeAll(async () => {
    t = await TestApp.start(postgres as NonNullable<typeof postgres>, {
      overrides: { events: bus },
    });
    holder = await LockHolder.connect(t.backend.env.DATABASE_URL as string);
  });
  afterAll(async () => {
    await holder?.end();
    await t?.close();
  });

  it("the tombstones of a deleted account and the peer's sends around them reach the peer in version order", async () => {
    const { fan, influencer, id } = await twoMembers(t);
    await fan.sent(id, 'f1');
    await fan.sent(id, 'f2');
    const versions: number[] = [];
    await bus.subscribe(influencer.userId, ({ event }) => {
      if (event.conversation_id === id && event.type !== 'conversation.read')
        versions.push(event.version as number);
    });
    // The conversation's row is busy: the first send and the deletion queue on it.
    await holder.hold('select 1 from conversations where id = $1 for update', [id]);
    const first = influencer.send(id, 'before the deletion');
    await holder.untilWaiting('with "numbered"');
    const deleting = fan.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    await holder.untilWaiting('set "version" = version +');
    // A second send under way meanwhile (held before its write): the first one's event waits
    // for it, as it must; the deletion's must wait too, not overtake.
    const gate = holdNextSend();
    const second = influencer.send(id, 'after the deletion');
    await gate.inside;
    await holder.release();
    expect((await first).statusCode).toBe(201);
    expect((await deleting).statusCode).toBe(200);
    gate.release();
    expect(errorOf(await second)).toEqual([403, 'cannot_message']); // the peer is gone
    // v3 the first send, v4 and v5 the tombstones of f1 and f2.
    expect(versions).toEqual([3, 4, 5]);
  });
});
