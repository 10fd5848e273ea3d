import { describe, expect, it } from 'vitest';
import { writeInVersionOrder } from '../../src/chat/events.js';
import type { EventBus } from '../../src/events/bus.js';

/**
 * Overlapping writes of one conversation can come back in any order (separate PostgreSQL
 * connections); their events go out in version order once the overlapping ones have all ended.
 */
function writes() {
  const published: number[] = [];
  const ctx = { events: {} as EventBus };
  const start = (conversationId = 'c') => {
    let settle!: (outcome: { version: number } | Error) => void;
    const done = writeInVersionOrder(
      ctx,
      conversationId,
      () =>
        new Promise<{ version: number }>((resolve, reject) => {
          settle = (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome));
        }),
      (row) => published.push(row.version),
    ).catch(() => undefined);
    return async (outcome: { version: number } | Error) => {
      settle(outcome);
      await done;
    };
  };
  return { published, start };
}

describe('message events of overlapping writes', () => {
  it('wait for the writes that overlap them, then go out in version order', async () => {
    const { published, start } = writes();
    const first = start();
    const second = start();
    const third = start();
    await second({ version: 2 });
    await third({ version: 3 });
    expect(published).toEqual([]);
    await first({ version: 1 });
    expect(published).toEqual([1, 2, 3]);
  });

  it('go out at once from a write that overlaps none, and after one that failed', async () => {
    const { published, start } = writes();
    await start()({ version: 1 });
    expect(published).toEqual([1]);
    const failing = start();
    const next = start();
    await next({ version: 2 });
    expect(published).toEqual([1]);
    await failing(new Error('refused'));
    expect(published).toEqual([1, 2]);
  });

  it('never wait for writes of another conversation', async () => {
    const { published, start } = writes();
    const elsewhere = start('other');
    await start('c')({ version: 7 });
    expect(published).toEqual([7]);
    await elsewhere({ version: 1 });
    expect(published).toEqual([7, 1]);
  });
});
