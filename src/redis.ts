import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
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
