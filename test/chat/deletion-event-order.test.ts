import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
      if (event.conversation_id === id) versions.push(event.version as number);
    });
    // The conversation's row is busy: every write of it queues.
    await holder.hold('select 1 from conversations where id = $1 for update', [id]);
    const first = influencer.send(id, 'before the deletion');
    await holder.untilWaiting('with "numbered"');
    const deleting = fan.call('DELETE', '/api/profile', { password: STRONG_PASSWORD });
    await holder.untilWaiting('set "version" = version +');
    const second = influencer.send(id, 'after the deletion');
    await holder.untilWaiting('with "numbered"', 2);
    await holder.release();

    expect((await first).statusCode).toBe(201);
    expect((await deleting).statusCode).toBe(200);
    expect(errorOf(await second)).toEqual([403, 'cannot_message']); // the peer is gone
    // v3 the first send, v4 and v5 the tombstones of f1 and f2.
    expect(versions).toEqual([3, 4, 5]);
  });
});
