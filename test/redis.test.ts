import { createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { reconnectWhenSilent, whenReady } from '../src/redis.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

/**
 * Stands in for Redis as far as ioredis's handshake goes: HELLO 3 answered with a RESP3 map, every
 * other command (CLIENT SETINFO) with OK, so that without a ready check the connection is ready.
 * PINGs: with `pauseMs`, those that come within `pauseMs` of the first are answered together
 * once it has passed (as a Redis paused by a fork, or a slow command, answers what queued up),
 * later ones at once; without, never.
 */
function answerHandshake(connection: Socket, pauseMs?: number): void {
  let pauseEnds: number | undefined;
  connection.on('data', (data) => {
    const commands = String(data)
      .split(/\*\d+\r\n/)
      .slice(1);
    for (const command of commands) {
      if (/hello/i.test(command)) connection.write('%1\r\n+proto\r\n:3\r\n');
      else if (!/ping/i.test(command)) connection.write('+OK\r\n');
      else if (pauseMs !== undefined) {
        pauseEnds ??= Date.now() + pauseMs;
        const answer = () => connection.writable && connection.write('+PONG\r\n');
        setTimeout(answer, Math.max(0, pauseEnds - Date.now()));
      }
    }
  });
}

/** A stand-in Redis that pauses for `pauseMs` at the first PING (never answers one: undefined). */
async function pausingRedis(pauseMs: number | undefined): Promise<number> {
  const server = createServer((connection) => answerHandshake(connection, pauseMs));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  return (server.address() as { port: number }).port;
}

/** A connection as publishers have it (500 ms command timeout), checked every 100 ms. */
async function checkedConnection(port: number, withinMs: number) {
  const redis = new Redis({
    port,
    host: '127.0.0.1',
    enableReadyCheck: false,
    commandTimeout: 500,
  });
  redis.on('error', () => undefined);
  closers.push(() => redis.disconnect());
  await whenReady([redis], 5_000);
  expect(redis.status).toBe('ready');
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
  let drops = 0;
  redis.on('close', () => (drops += 1));
  reconnectWhenSilent(redis, log, 'test', { everyMs: 100, withinMs });
  return { warnings, drops: () => drops };
}

it('keeps a connection to a Redis that pauses longer than its command timeout, within the check', async () => {
  const { warnings, drops } = await checkedConnection(await pausingRedis(1_500), 3_000);
  await sleep(4_500); // past the first check's window, and many checks after it
  expect(drops()).toBe(0);
  expect(warnings).toEqual([]);
});

it('reconnects a connection whose PINGs get no answer within the check', async () => {
  const { warnings, drops } = await checkedConnection(await pausingRedis(undefined), 1_000);
  await expect.poll(drops, { timeout: 5_000 }).toBeGreaterThan(0);
  expect(warnings.join('')).toContain('Redis connection silent; reconnecting');
});

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
