import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Delivery } from '../../../src/events/bus.js';
import { REORDER_WAIT_MS, VersionOrder } from '../../../src/chat/realtime/ordering.js';

/** A message event of conversation `c1` at `version`, as one user's delivery. */
const delivery = (version: number): Delivery => ({
  userId: 'u1',
  event: { type: 'message.created', conversation_id: 'c1', version, chat_message: {} },
  publishedAt: 0,
});

/** The versions VersionOrder hands on, in order, for the deliveries `versions`. */
function ordered(versions: number[]): number[] {
  const out: number[] = [];
  const order = new VersionOrder((d) => out.push(d.event.version as number));
  for (const version of versions) order.accept(delivery(version));
  vi.advanceTimersByTime(REORDER_WAIT_MS * 3);
  order.dispose();
  return out;
}

/**
 * API.md: events reach each socket "exactly once, in `version` order per conversation"; they may
 * be lost, "never duplicated".
 */
describe('version order of one user’s events', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('hands on a version that arrives twice once (the first one seen, or a later one)', () => {
    expect(ordered([1, 1])).toEqual([1]);
    expect(ordered([1, 2, 2, 3])).toEqual([1, 2, 3]);
  });

  it('flushes what waited past a gap that never filled in version order, not arrival order', () => {
    expect(ordered([1, 5, 4, 3])).toEqual([1, 3, 4, 5]);
  });
});
