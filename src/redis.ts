import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';

/** How long start-up waits for Redis before a component starts in its degraded mode. */
const REDIS_CONNECT_WAIT_MS = 2_000;

/**
 * Resolves once every connection is ready, or after `waitMs`, whichever comes first. Start-up
 * waits so the first command does not fail over needlessly (a publish on a connection still
 * connecting would reach this instance only); a Redis that is not there does not stop the service.
 */
export async function whenReady(
  connections: readonly Redis[],
  waitMs = REDIS_CONNECT_WAIT_MS,
): Promise<void> {
  // Not events.once: it gives up at the first 'error', and a Redis starting alongside the service
  // refuses its first attempts.
  const listeners: Array<() => void> = [];
  const ready = connections.map((c) =>
    c.status === 'ready'
      ? undefined
      : new Promise<void>((resolve) => {
          c.once('ready', resolve);
          listeners.push(() => c.off('ready', resolve));
        }),
  );
  try {
    await Promise.race([Promise.all(ready), sleep(waitMs, undefined, { ref: false })]);
  } finally {
    for (const stopListening of listeners) stopListening();
  }
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
    // Not `code`: the log withholds every field of that name (one-time codes) outside an error.
    const errorCode = typeof error.code === 'string' ? error.code : undefined;
    log.warn(
      { redis: purpose, reason: String(error.message).slice(0, 200), errorCode },
      'Redis connection failing; retrying',
    );
  });
}

/** How often an idle connection is asked to answer, and how long it has to answer. */
export interface SilenceCheck {
  readonly everyMs: number;
  readonly withinMs: number;
}

export const SILENCE_CHECK: SilenceCheck = { everyMs: 15_000, withinMs: 5_000 };

/** How the service's Redis clients connect, beyond the URL. */
export interface RedisOptions {
  readonly silenceCheck?: SilenceCheck;
  /** Put before every key and channel (REDIS_PREFIX): several deployments may share one Redis. */
  readonly prefix?: string;
}

/**
 * Pings until an answer comes (an error reply is one), for up to `withinMs`: a connection with a
 * command timeout (500 ms for publishers and limits) gives up on each PING sooner than that, and
 * a Redis that pauses for a second (a fork for a snapshot, a slow command), then answers what
 * queued up, is not silent. One slower than the command timeout all along is dropped: every
 * command of that connection times out anyway.
 */
async function answers(connection: Redis, withinMs: number): Promise<'answered' | 'silent'> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline && connection.status === 'ready') {
    try {
      await connection.ping();
      return 'answered';
    } catch (error) {
      if (!(error instanceof Error && error.message === 'Command timed out')) return 'answered';
    }
  }
  return 'silent';
}

/**
 * Reconnects a connection that stops answering while it looks open. A connection cut without a
 * FIN or RST (a NAT or firewall dropping an idle flow, Redis moving to another machine on
 * failover) stays "ready" for hours, until the kernel's keep-alive gives up: a subscriber then
 * hears nothing and never says so, and every command of another one times out one by one. A PING
 * every `everyMs` that has no answer within `withinMs` drops the connection, and ioredis opens a
 * new one (a subscriber's owner learns of the gap from its `close` and `ready`).
 */
export function reconnectWhenSilent(
  connection: Redis,
  log: FastifyBaseLogger,
  purpose: string,
  check: SilenceCheck = SILENCE_CHECK,
): void {
  let checking = false;
  const timer = setInterval(() => {
    if (checking || connection.status !== 'ready') return;
    checking = true;
    const silence = sleep(check.withinMs, 'silent' as const, { ref: false });
    void Promise.race([answers(connection, check.withinMs), silence]).then((outcome) => {
      checking = false;
      if (outcome === 'answered' || connection.status !== 'ready') return;
      log.warn(
        { redis: purpose, after_ms: check.withinMs },
        'Redis connection silent; reconnecting',
      );
      connection.disconnect(true);
    });
  }, check.everyMs);
  timer.unref();
  connection.once('end', () => clearInterval(timer));
}

/**
 * A connection for commands that must not wait for a Redis that is away: a command fails at once
 * while it is disconnected (no offline queue, no retry), or after 500 ms without an answer, and the
 * caller falls back (the rate limits, the chat socket seats). Resolves once it is ready, or after
 * up to 2 s: a Redis that is not there does not stop the service.
 */
export async function failFastConnection(
  url: string,
  log: FastifyBaseLogger,
  purpose: string,
  silenceCheck: SilenceCheck = SILENCE_CHECK,
): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    connectTimeout: REDIS_CONNECT_WAIT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // The caller's fallback logs the outage once; this says why.
  reportConnectionErrors(redis, log, purpose);
  reconnectWhenSilent(redis, log, purpose, silenceCheck);
  await whenReady([redis]);
  return redis;
}
