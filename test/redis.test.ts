import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { whenReady } from '../src/redis.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/**
 * Stands in for Redis as far as ioredis's handshake goes: HELLO 3 answered with a RESP3 map, every
 * other command (CLIENT SETINFO) with OK. Without a ready check, the connection is then ready.
 */
function answerHandshake(connection: Socket): void {
  connection.on('data', (data) => {
    for (const command of String(data)
      .split(/\*\d+\r\n/)
      .slice(1))
      connection.write(/hello/i.test(command) ? '%1\r\n+proto\r\n:3\r\n' : '+OK\r\n');
  });
}

/** A port nothing listens on yet. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

// A Redis that starts alongside the service refuses the first attempts: start-up still waits.
it('whenReady waits through refused attempts for a Redis that comes up within its wait', async () => {
  const port = await freePort();
  const redis = new Redis({ port, host: '127.0.0.1', enableReadyCheck: false });
  redis.on('error', () => undefined);
  closers.push(() => redis.disconnect());
  let refused = 0;
  redis.on('error', () => (refused += 1));

  const waiting = whenReady([redis], 20_000);
  await expect.poll(() => refused).toBeGreaterThan(0);
  const server: Server = createServer(answerHandshake);
  closers.push(() => server.close());
  server.listen(port, '127.0.0.1');
  await waiting;
  expect(redis.status).toBe('ready');
  expect(redis.listenerCount('ready')).toBe(0);
});

it('whenReady gives up after its wait, and leaves no listener behind', async () => {
  const redis = new Redis({ port: await freePort(), host: '127.0.0.1', enableReadyCheck: false });
  redis.on('error', () => undefined);
  closers.push(() => redis.disconnect());
  await whenReady([redis], 200);
  expect(redis.status).not.toBe('ready');
  expect(redis.listenerCount('ready')).toBe(0);
});
