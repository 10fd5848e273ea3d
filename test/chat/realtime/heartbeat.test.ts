import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatSocket } from '../../../src/chat/realtime/chat-socket.js';
import { DEADLINE_CHECK_MS, startSocketClocks } from '../../../src/chat/realtime/heartbeat.js';

/** Counts what the clocks ask of each socket; the clocks need nothing else of a ChatSocket. */
class CountingSocket {
  pings = 0;
  heartbeat(): void {
    this.pings += 1;
  }
  closeIfOverdue(): void {}
}

function held(count: number) {
  const all = new Set(Array.from({ length: count }, () => new CountingSocket()));
  return {
    all,
    // A structural stand-in: the clocks call heartbeat() and closeIfOverdue() only.
    registry: {
      get size() {
        return all.size;
      },
      sockets: () => all.values() as unknown as IterableIterator<ChatSocket>,
    },
  };
}

const INTERVAL_MS = 30_000;
const TICKS = INTERVAL_MS / DEADLINE_CHECK_MS;

describe('chat socket heartbeat', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('pings a slice of the sockets each tick, not all of them at once', () => {
    const { all, registry } = held(1200);
    const stop = startSocketClocks(registry, Date.now, INTERVAL_MS);
    vi.advanceTimersByTime(DEADLINE_CHECK_MS);
    const pinged = [...all].filter((s) => s.pings > 0).length;
    expect(pinged).toBe(1200 / TICKS);
    stop();
  });

  it('pings every socket once per interval, those added meanwhile too', () => {
    const { all, registry } = held(1000);
    const stop = startSocketClocks(registry, Date.now, INTERVAL_MS);
    vi.advanceTimersByTime(INTERVAL_MS / 2);
    const late = new CountingSocket();
    all.add(late);
    vi.advanceTimersByTime(INTERVAL_MS / 2);
    expect([...all].map((s) => s.pings)).toEqual(Array.from({ length: 1001 }, () => 1));
    vi.advanceTimersByTime(INTERVAL_MS);
    expect(new Set([...all].map((s) => s.pings))).toEqual(new Set([2]));
    stop();
  });

  it('pings them all every tick when the interval is as short as a tick', () => {
    const { all, registry } = held(5);
    const stop = startSocketClocks(registry, Date.now, DEADLINE_CHECK_MS);
    vi.advanceTimersByTime(3 * DEADLINE_CHECK_MS);
    expect([...all].map((s) => s.pings)).toEqual([3, 3, 3, 3, 3]);
    stop();
  });
});
