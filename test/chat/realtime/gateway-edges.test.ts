import { pino } from 'pino';
import { Registry } from 'prom-client';
import type { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../../src/context.js';
import { ChatGateway, type GatewayDependencies } from '../../../src/chat/realtime/gateway.js';
import { MemoryEventBus } from '../../../src/events/memory-bus.js';
import { RealtimeMetrics } from '../../../src/operations/realtime-metrics.js';
import { FakeWs } from './fake-ws.js';

// Two moments no socket over a real port can be held at: the gateway is driven directly, with a
// stand-in for ws's socket and only the context it reads.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function gatewayWith(ctx: Partial<ServiceContext>): ChatGateway {
  const log = pino({ level: 'silent' });
  const deps = {
    ctx: { events: new MemoryEventBus(log), clock: Date.now, ...ctx },
    metrics: new RealtimeMetrics(new Registry()),
    log,
    databaseOutage: { failed: () => undefined },
  } as unknown as GatewayDependencies;
  return new ChatGateway(deps);
}

const accept = (gateway: ChatGateway, token?: string) => {
  const ws = new FakeWs();
  gateway.accept(ws as unknown as WebSocket, token, '192.0.2.1');
  return ws;
};

/**
 * API.md: `1001` "the server is shutting down". An upgrade that was already past routing when
 * the shutdown began (its hooks still running) reaches the gateway after its sockets were told
 * 1001 and its clocks stopped: it is closed with 1001 too, not left waiting for an `auth` frame
 * that no deadline sweep will ever time out.
 */
describe('a socket accepted once the gateway is shutting down', () => {
  it('is closed with 1001 at once, with or without a token on the upgrade', async () => {
    const gateway = gatewayWith({});
    await gateway.shutdown();
    expect(accept(gateway).closedWith).toBe(1001);
    expect(accept(gateway, 'a-token').closedWith).toBe(1001);
  });
});

/**
 * API.md: a first `auth` frame "within 5 s", else 4408. A frame that came inside the window is
 * answered by its check, however long the check of its signature takes (a key this instance does
 * not hold yet is read from the database): the window stays open while the token is checked.
 */
describe('an auth frame sent late in the 5 s window, whose check is slow', () => {
  it('gets the answer of its check (here 4401), not 4408', async () => {
    let now = 1_000_000;
    let answer: (claims: undefined) => void = () => undefined;
    const gateway = gatewayWith({
      clock: () => now,
      accessTokens: {
        verify: () => new Promise((resolve) => (answer = resolve)),
      } as unknown as ServiceContext['accessTokens'],
    });
    const ws = accept(gateway);
    try {
      now += 4_500;
      ws.emit(
        'message',
        Buffer.from(JSON.stringify({ type: 'auth', access_token: 'x.y.z' })),
        false,
      );
      now += 1_500; // past the 5 s while the signature is checked
      await sleep(700); // more than two deadline sweeps (every 250 ms)
      expect(ws.closedWith).toBeUndefined();
      answer(undefined); // not a valid token
      await expect.poll(() => ws.closedWith).toBe(4401);
    } finally {
      ws.terminate();
      await gateway.shutdown();
    }
  });
});
