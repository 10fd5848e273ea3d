import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis, Result } from 'ioredis';
import { CircuitBreaker } from '../../limits/circuit-breaker.js';
import { OutageLog } from '../../outage-log.js';
import { failFastConnection, SILENCE_CHECK, type RedisOptions } from '../../redis.js';
import { MAX_SOCKETS_PER_USER, SEAT_LEASE_MS } from './socket-limits.js';
import type { Seat, SocketSeats } from './socket-seats.js';

/**
 * A user's seats are a sorted set of seat names scored by when their lease runs out. A seat whose
 * lease ran out belongs to an instance that stopped renewing it (it was killed): it no longer
 * counts. ARGV: now, lease, limit, seat. Answers 1 when the seat was taken, 0 when all are.
 */
const TAKE = `
local key, now, lease, limit, seat = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
if redis.call('ZCARD', key) >= limit then return 0 end
redis.call('ZADD', key, now + lease, seat)
if redis.call('PTTL', key) < lease then redis.call('PEXPIRE', key, lease) end
return 1
`;

/**
 * Extends the leases of seats still held: KEYS[i] holds seat ARGV[i + 2]. A seat Redis lost (it
 * restarted empty) or never had (taken while it was away) is written again: its socket is open.
 */
const RENEW = `
local lease = tonumber(ARGV[2])
local expiry = tonumber(ARGV[1]) + lease
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, expiry, ARGV[i + 2])
  if redis.call('PTTL', key) < lease then redis.call('PEXPIRE', key, lease) end
end
return #KEYS
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    takeSeat(key: string, ...args: (string | number)[]): Result<number, Context>;
    renewSeats(...keysThenArgs: (string | number)[]): Result<number, Context>;
  }
}

/** A user's seats are `<REDIS_PREFIX>chat:seats:<user id>`. */
const KEY_PREFIX = 'chat:seats:';
/** Seats renewed per script call: one round trip each, none holding Redis long. */
const RENEW_BATCH = 500;

export interface SeatTiming {
  /** A seat not renewed for this long no longer counts. */
  readonly leaseMs: number;
  /** How often this instance renews the seats it holds: well within the lease. */
  readonly renewEveryMs: number;
}

/** Renewed four times a lease: three renewals may fail (a Redis that blinks) before a seat lapses. */
const SEAT_TIMING: SeatTiming = { leaseMs: SEAT_LEASE_MS, renewEveryMs: SEAT_LEASE_MS / 4 };

/**
 * Every instance's sockets counted in Redis, so that a user's cap holds across the fleet. A
 * seat is leased, and renewed while its socket stays open: a killed instance's seats free
 * themselves within the lease. While Redis is away (after one failed call, until a background
 * probe gets an answer) every seat is granted, so the cap holds per instance as without Redis;
 * the seats granted meanwhile are written to Redis by the next renewal.
 */
export class RedisSocketSeats implements SocketSeats {
  /** The seats this instance holds: seat name → its user's key. */
  private readonly held = new Map<string, string>();
  private readonly instance = randomBytes(6).toString('base64url');
  private taken = 0;
  private readonly keyPrefix: string;
  private readonly breaker: CircuitBreaker;
  private readonly outage: OutageLog;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly redis: Redis,
    private readonly clock: () => number,
    log: FastifyBaseLogger,
    prefix = '',
    private readonly timing: SeatTiming = SEAT_TIMING,
  ) {
    this.keyPrefix = `${prefix}${KEY_PREFIX}`;
    redis.defineCommand('takeSeat', { lua: TAKE, numberOfKeys: 1 });
    redis.defineCommand('renewSeats', { lua: RENEW });
    this.outage = new OutageLog({
      dependency: 'Redis',
      meanwhile: "chat sockets are counted against each user's cap per instance",
      counted: (count) => `${count} chat ${count === 1 ? 'socket' : 'sockets'} seated meanwhile`,
      log,
      level: 'warn',
      clock,
      reportEveryMs: 60_000,
      withStack: false,
    });
    this.breaker = new CircuitBreaker(
      () => this.renewHeld(),
      () => this.outage.answered(),
    );
    this.timer = setInterval(() => void this.renew(), timing.renewEveryMs).unref();
  }

  /** Connects as the rate limits do: a command fails at once while Redis is away, never queues. */
  static async connect(
    url: string,
    clock: () => number,
    log: FastifyBaseLogger,
    { silenceCheck = SILENCE_CHECK, prefix = '' }: RedisOptions = {},
    timing = SEAT_TIMING,
  ): Promise<RedisSocketSeats> {
    const redis = await failFastConnection(url, log, 'chat socket seats', silenceCheck);
    return new RedisSocketSeats(redis, clock, log, prefix, timing);
  }

  async take(userId: string): Promise<Seat | undefined> {
    const key = this.keyPrefix + userId;
    const name = `${this.instance}:${(this.taken += 1)}`;
    if (this.breaker.isOpen) return this.seatMeanwhile(key, name, undefined);
    try {
      const { leaseMs } = this.timing;
      const taken = await this.redis.takeSeat(
        key,
        this.clock(),
        leaseMs,
        MAX_SOCKETS_PER_USER,
        name,
      );
      if (taken === 0) return undefined;
      return this.hold(key, name);
    } catch (error) {
      // A TAKE that timed out may still run in Redis: the seat is held under the same name.
      this.breaker.trip();
      return this.seatMeanwhile(key, name, error);
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.breaker.stop();
    this.redis.disconnect();
  }

  /** `cause`: the error that just opened the breaker, if this call met it. */
  private seatMeanwhile(key: string, name: string, cause: unknown): Seat {
    this.outage.failed(cause);
    return this.hold(key, name);
  }

  private hold(key: string, name: string): Seat {
    this.held.set(name, key);
    return { release: () => this.release(name) };
  }

  /** Never fails: a seat Redis did not take back frees itself when its lease runs out. */
  private async release(name: string): Promise<void> {
    const key = this.held.get(name);
    if (key === undefined || !this.held.delete(name) || this.breaker.isOpen) return;
    await this.redis.zrem(key, name).catch(() => undefined);
  }

  private async renew(): Promise<void> {
    if (this.breaker.isOpen) return;
    await this.renewHeld().catch((error: unknown) => {
      if (this.breaker.trip()) this.outage.failed(error);
    });
  }

  /** Every held seat's lease from now, in batches; rejects at the first batch that fails. */
  private async renewHeld(): Promise<void> {
    const seats = [...this.held];
    for (let start = 0; start < seats.length; start += RENEW_BATCH) {
      const batch = seats.slice(start, start + RENEW_BATCH);
      const keys = batch.map(([, key]) => key);
      const names = batch.map(([name]) => name);
      const args = [this.clock(), this.timing.leaseMs, ...names];
      await this.redis.renewSeats(keys.length, ...keys, ...args);
    }
    // The breaker's probe: with no seat to renew, Redis must still answer.
    if (seats.length === 0) await this.redis.ping();
  }
}
