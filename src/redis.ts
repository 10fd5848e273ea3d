import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';

/** How long start-up waits for Redis before a component starts in its degraded mode. */
export const REDIS_CONNECT_WAIT_MS = 2_000;

/**
 * Resolves once every connection is ready, or after `waitMs`, whichever comes first. Start-up
 * waits so the first command does not fail over needlessly (a publish on a connection still
 * connecting would reach this instance only); a Redis that is not there does not stop the service.
 */
export async function whenReady(
  connections: readonly Redis[],
  waitMs = REDIS_CONNECT_WAIT_MS,
): Promise<void> {
  const ready = connections.map((c) =>
    c.status === 'ready' ? undefined : once(c, 'ready').catch(() => undefined),
  );
  await Promise.race([Promise.all(ready), sleep(waitMs, undefined, { ref: false })]);
}

/**
 * Says why a Redis connection fails, once until it is ready again: the components that use it
 * report the outage in their own terms ("Stream isn't writeable"), which hid the cause (a wrong
 * password looked like a network outage). Only the error's own message and code: ioredis attaches
 * the failed command to some errors, and AUTH's arguments are the password.
 */
export function reportConnectionErrors(
  connection: Redis,
  log: FastifyBaseLogger,
  purpose: string,
): void {
  let reported = false;
  connection.on('ready', () => {
    reported = false;
  });
  connection.on('error', (error: Error & { code?: unknown }) => {
    if (reported) return;
    reported = true;
    const code = typeof error.code === 'string' ? error.code : undefined;
    log.warn(
      { redis: purpose, reason: String(error.message).slice(0, 200), code },
      'Redis connection failing; retrying',
    );
  });
}
