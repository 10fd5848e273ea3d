import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChatSocket } from '../../../src/chat/realtime/chat-socket.js';
import { startSocketClocks } from '../../../src/chat/realtime/heartbeat.js';
import { HEARTBEAT_INTERVAL_MS } from '../../../src/chat/realtime/socket-limits.js';

/** API.md: "the server pings every 30 s". heartbeat.ts pings a slice of the sockets per tick. */
class CountingSocket {
  pingedAt: number[] = [];
  heartbeat(): void {
    this.pingedAt.push(Date.now());
  }
  closeIfOverdue(): void {}
}

const INTERVAL_MS = 30_000;

describe('heartbeat when sockets close during a round', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('pings every open socket in every 30 s round, even when others closed meanwhile', () => {
    const all = new Set(Array.from({ length: 1000 }, () => new CountingSocket()));
    const registry = {
      get size() {
        return all.size;
      },
      sockets: () => all.values() as unknown as IterableIterator<ChatSocket>,
    };
    const stop = startSocketClocks(registry, Date.now, INTERVAL_MS);
    vi.advanceTimersByTime(INTERVAL_MS); // round 1: each pinged once
    vi.advanceTimersByTime(INTERVAL_MS / 2); // round 2, half way
    // The half pinged so far in round 2 disconnect (e.g. a deploy elsewhere, a network blip).
    const [pinged, waiting] = [[...all].slice(0, 500), [...all].slice(500)];
    for (const socket of pinged) all.delete(socket);
    vi.advanceTimersByTime(INTERVAL_MS / 2); // end of round 2
    const unpinged = waiting.filter((socket) => socket.pingedAt.length < 2).length;
    expect(unpinged).toBe(0);
    stop();
  });
});

describe('the heartbeat interval', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  // The service's own interval (the gateway's default), not one a test passes in.
  it('pings a socket every 30 s: once in its first 30 s, again right after', () => {
    const socket = new CountingSocket();
    const registry = {
      size: 1,
      sockets: () => [socket].values() as unknown as IterableIterator<ChatSocket>,
    };
    const started = Date.now();
    const stop = startSocketClocks(registry, Date.now, HEARTBEAT_INTERVAL_MS);
    vi.advanceTimersByTime(29_900);
    expect(socket.pingedAt).toHaveLength(1);
    vi.advanceTimersByTime(600);
    expect(socket.pingedAt.map((at) => at - started)).toEqual([250, 30_250]);
    stop();
  });
});
