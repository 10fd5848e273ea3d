import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REQUEST_TIMING } from '../../src/app.js';
import { backends } from '../helpers/backends.js';
import { TestApp } from '../helpers/test-app.js';
import { SocketClient } from '../chat/realtime/socket-client.js';

/** What the server sent on a raw connection, and whether (and when) it closed it. */
interface Outcome {
  readonly received: string;
  readonly closed: boolean;
}

/**
 * Slowloris: a client that sends its request slowly, or stops half-way, must not hold its
 * connection for ever. Each test app shortens the time a request may take to arrive.
 */
describe.each(backends)('requests that never finish arriving ($name)', (backend) => {
  const timing = { timeoutMs: 500, checkIntervalMs: 100 };
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await TestApp.start(backend, { overrides: { requestTiming: timing } });
    port = Number(new URL(await t.listen()).port);
  });
  afterAll(() => t.close());

  /** Writes `bytes` and waits up to `waitMs` for the server to close the connection. */
  async function stall(bytes: string, waitMs: number): Promise<Outcome> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    const closed = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(bytes);
    const outcome = await Promise.race([
      closed,
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), waitMs)),
    ]);
    socket.destroy();
    return { received, closed: outcome };
  }

  const expectTimedOut = (outcome: Outcome) => {
    expect(outcome.closed).toBe(true);
    const [head = '', body = ''] = outcome.received.split('\r\n\r\n', 2);
    expect(head.split(' ')[1]).toBe('408');
    expect(JSON.parse(body)).toMatchObject({ error: 'bad_request' });
  };

  it('a body that stops half-way is answered 408 and its connection closed', async () => {
    const outcome = await stall(
      'POST /api/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"email":',
      10 * timing.timeoutMs,
    );
    expectTimedOut(outcome);
  });

  it('headers that stop half-way are answered 408 and the connection closed', async () => {
    const outcome = await stall(
      'GET /api/profile HTTP/1.1\r\nHost: localhost\r\n',
      10 * timing.timeoutMs,
    );
    expectTimedOut(outcome);
  });

  it('a chat socket, no longer a request once upgraded, stays open well past that time', async () => {
    const account = await t.register();
    const base = `ws://127.0.0.1:${port}`;
    const client = await SocketClient.connect(`${base}/api/chat/ws`, {
      token: account.accessToken,
    });
    await client.waitFor('ready');
    await new Promise((resolve) => setTimeout(resolve, 4 * timing.timeoutMs));
    expect(client.isOpen).toBe(true);
    client.send({ type: 'ping' });
    await client.waitFor('pong');
    client.close();
  });
});

describe.each(backends)('the request time limit by default ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  // Fastify sets Node's requestTimeout to 0 (off) unless told otherwise.
  it('is on, and a stalled request goes within 31 s', async () => {
    await t.listen(); // Node starts its checks when the server listens
    const server = t.app.server;
    expect(server.requestTimeout).toBe(DEFAULT_REQUEST_TIMING.timeoutMs);
    expect(server.requestTimeout).toBeGreaterThan(0);
    expect(server.headersTimeout).toBeLessThanOrEqual(server.requestTimeout);
    // How often Node looks for stalled requests: its own timer, read where Node keeps it (the
    // option is not exposed otherwise), so the test sees what the server was given.
    const checking = Object.getOwnPropertySymbols(server).find(
      (symbol) => symbol.description === 'http.server.connectionsCheckingInterval',
    );
    const interval = (server as unknown as Record<symbol, { _idleTimeout?: number } | undefined>)[
      checking!
    ];
    expect(interval?._idleTimeout).toBe(DEFAULT_REQUEST_TIMING.checkIntervalMs);
    expect(server.requestTimeout + interval!._idleTimeout!).toBeLessThanOrEqual(31_000);
  });
});
