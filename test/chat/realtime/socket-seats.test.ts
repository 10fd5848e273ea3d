import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatSocket } from '../../../src/chat/realtime/chat-socket.js';
import { Closures } from '../../../src/chat/realtime/close-codes.js';
import type { Seat, SocketSeats } from '../../../src/chat/realtime/socket-seats.js';
import { SocketRegistry } from '../../../src/chat/realtime/sockets.js';
import type { EventBus } from '../../../src/events/bus.js';
import { MemoryEventBus } from '../../../src/events/memory-bus.js';
import { backends } from '../../helpers/backends.js';
import { RealtimeApp } from './fixture.js';
import { FakeWs } from './fake-ws.js';

/** Seats handed out and given back, with the answer to the next take decided by the test. */
class RecordingSeats implements SocketSeats {
  held = 0;
  released = 0;
  grant = true;
  private pending: Promise<void> | undefined;
  /** How long a release takes to be answered. */
  releaseMs = 0;
  releasedAt: number[] = [];

  async take(): Promise<Seat | undefined> {
    await this.pending;
    if (!this.grant) return undefined;
    this.held += 1;
    let given = false;
    return {
      release: async () => {
        if (given) return;
        given = true;
        await new Promise((resolve) => setTimeout(resolve, this.releaseMs));
        this.held -= 1;
        this.released += 1;
        this.releasedAt.push(Date.now());
      },
    };
  }
  close = async () => {};

  /** Takes wait until the returned function is called (a Redis slow to answer). */
  holdTakes(): () => void {
    let answer: () => void = () => undefined;
    this.pending = new Promise((resolve) => (answer = resolve));
    return () => answer();
  }
}

/** The memory bus, counting the subscriptions still live. */
function countingBus(): EventBus & { live: () => number } {
  const bus = new MemoryEventBus(pino({ level: 'silent' }));
  let live = 0;
  return Object.assign(Object.create(bus) as EventBus, {
    subscribe: async (...args: Parameters<EventBus['subscribe']>) => {
      const stop = await bus.subscribe(...args);
      live += 1;
      return () => {
        live -= 1;
        stop();
      };
    },
    live: () => live,
  });
}

function registryWith(seats: SocketSeats) {
  const bus = countingBus();
  const registry = new SocketRegistry(bus, () => undefined, seats);
  const socketOf = (userId: string) => {
    const ws = new FakeWs();
    const socket = new ChatSocket(ws as unknown as WebSocket, Date.now() + 5_000);
    socket.authenticate(userId, randomUUID(), Date.now() + 60_000);
    registry.add(socket);
    return { ws, socket };
  };
  return { bus, registry, socketOf };
}

const settled = () => new Promise((resolve) => setTimeout(resolve, 10));

describe("the registry and its sockets' seats", () => {
  it('a socket refused a seat is not counted here either, and leaves no subscription behind', async () => {
    const seats = new RecordingSeats();
    const { bus, registry, socketOf } = registryWith(seats);
    const user = randomUUID();
    seats.grant = false;
    expect(await registry.attach(socketOf(user).socket)).toBe(false);
    await settled();
    expect(bus.live()).toBe(0);
    seats.grant = true;
    const five = Array.from({ length: 5 }, () => socketOf(user).socket);
    for (const socket of five) expect(await registry.attach(socket)).toBe(true);
    expect(seats.held).toBe(5);
  });

  it.each([
    [
      'its client closed',
      (ws: FakeWs, socket: ChatSocket, registry: SocketRegistry) => {
        ws.terminate();
        registry.remove(socket);
      },
    ],
    // Its client has not answered the close frame: the socket is still listed.
    ['the server closed', (_ws: FakeWs, socket: ChatSocket) => socket.close(Closures.sessionEnded)],
  ] as const)(
    'gives back the seat of a socket %s while its seat was being taken',
    async (_how, closeIt) => {
      const seats = new RecordingSeats();
      const { registry, socketOf } = registryWith(seats);
      const answer = seats.holdTakes();
      const { ws, socket } = socketOf(randomUUID());
      const attached = registry.attach(socket);
      closeIt(ws, socket, registry);
      answer();
      expect(await attached).toBe(false);
      expect(seats.held).toBe(0);
    },
  );

  it('frees the seat as the server closes a socket, before its client answers', async () => {
    const seats = new RecordingSeats();
    const { registry, socketOf } = registryWith(seats);
    const { ws, socket } = socketOf(randomUUID());
    expect(await registry.attach(socket)).toBe(true);
    socket.close(Closures.sessionEnded);
    await settled();
    expect(ws.readyState).toBe(2); // CLOSING: the client has not answered
    expect(seats.released).toBe(1);
    ws.terminate();
    registry.remove(socket);
    await settled();
    expect(seats.released).toBe(1);
  });

  it('frees the seat of a socket its client closed', async () => {
    const seats = new RecordingSeats();
    const { registry, socketOf } = registryWith(seats);
    const { ws, socket } = socketOf(randomUUID());
    expect(await registry.attach(socket)).toBe(true);
    ws.terminate();
    registry.remove(socket);
    await settled();
    expect(seats.held).toBe(0);
  });
});

/**
 * A shutdown tells every socket to reconnect to another instance (1001), where the seats must
 * already be free: they are given back before the close frames go out.
 */
describe.each(backends.slice(0, 1))('a shutdown and the seats ($name)', (backend) => {
  const seats = new RecordingSeats();
  let rt: RealtimeApp;
  beforeAll(async () => {
    seats.releaseMs = 200;
    rt = await RealtimeApp.start(backend, { overrides: { socketSeats: seats } });
  });
  afterAll(async () => {
    await rt?.close().catch(() => undefined);
  });

  it('gives every seat back before any socket is told 1001', async () => {
    const account = await rt.t.register();
    const clients = await Promise.all([rt.connect(account), rt.connect(account)]);
    expect(seats.held).toBe(2);
    const closing = rt.t.app.close();
    const closes = await Promise.all(clients.map((client) => client.waitClosed()));
    const told = Date.now();
    expect(closes.map((close) => close.code)).toEqual([1001, 1001]);
    expect(seats.released).toBe(2);
    expect(Math.max(...seats.releasedAt)).toBeLessThanOrEqual(told);
    await closing;
  });
});
