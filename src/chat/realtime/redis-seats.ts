import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis, Result } from 'ioredis';
import { CircuitBreaker } from '../../limits/circuit-breaker.js';
import { OutageLog } from '../../outage-log.js';
import { failFastConnection, SILENCE_CHECK, type RedisOptions } from '../../redis.js';
import { INSTANCE_LEASE_MS, MAX_SOCKETS_PER_USER } from './socket-limits.js';
import type { Seat, SocketSeats } from './socket-seats.js';

/**
 * A user's seats are a set of `<instance>:<n>` names; an instance is alive while its key exists
 * (`beat` keeps it), so the seats of one that was killed (or that renamed itself) stop counting
 * when its key goes, with no renewal per seat. `live` counts a set's seats of live instances and
 * removes the others.
 */
const LIVE = `
local function live(key, instances)
  local count = 0
  for _, member in ipairs(redis.call('SMEMBERS', key)) do
    if redis.call('EXISTS', instances .. string.match(member, '^[^:]*')) == 1 then
      count = count + 1
    else
      redis.call('SREM', key, member)
    end
  end
  return count
end
`;

/**
 * ARGV: limit, seat, the instances' key prefix, the set's time to live. Answers 1 when the seat
 * was taken, 0 when the user's live seats are all taken.
 */
const TAKE = `${LIVE}
local key, limit, seat, instances, ttl = KEYS[1], tonumber(ARGV[1]), ARGV[2], ARGV[3], tonumber(ARGV[4])
if live(key, instances) >= limit then return 0 end
redis.call('SADD', key, seat)
redis.call('PEXPIRE', key, ttl)
return 1
`;

/**
 * Writes seats this instance holds: KEYS[i] holds seat ARGV[i + 2]. Seats Redis lost (it restarted
 * empty) or never had (granted while it was away) are written again, every user's set lives
 * another ARGV[1] ms, and loses the seats of instances gone (ARGV[2]: their keys' prefix), which
 * a user who opens no new socket would otherwise keep through every rename of the instance.
 */
const REGISTER = `${LIVE}
local ttl, instances = tonumber(ARGV[1]), ARGV[2]
for i, key in ipairs(KEYS) do
  live(key, instances)
  redis.call('SADD', key, ARGV[i + 2])
  redis.call('PEXPIRE', key, ttl)
end
return #KEYS
`;

/** Keeps the instance's key alive; answers whether it was still there (0: Redis lost it). */
const BEAT = `
local had = redis.call('EXISTS', KEYS[1])
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
return had
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    takeSeat(key: string, ...args: (string | number)[]): Result<number, Context>;
    registerSeats(...keysThenArgs: (string | number)[]): Result<number, Context>;
    beatInstance(key: string, leaseMs: number): Result<number, Context>;
  }
}

/** A user's seats are `<REDIS_PREFIX>chat:seats:<user id>`, an instance's key `…chat:instances:<id>`. */
const SEATS_PREFIX = 'chat:seats:';
const INSTANCES_PREFIX = 'chat:instances:';
/** Seats written per script call: one round trip each, none holding Redis long. */
const REGISTER_BATCH = 500;

export interface SeatTiming {
  /** An instance whose key was not renewed for this long is gone, and its seats with it. */
  readonly instanceLeaseMs: number;
  /** How often the instance renews its key: well within the lease. */
  readonly beatEveryMs: number;
  /**
   * A user's set lives this long after its last write: what is left of a killed instance's seats
   * goes away even if the user never comes back. The instance writes its seats again well within
   * it (every quarter), so a socket open for days keeps its seat.
   */
  readonly seatsTtlMs: number;
}

/** Four beats a lease: a loop stalled, or a Redis slow to answer, for three still counts alive. */
const SEAT_TIMING: SeatTiming = {
  instanceLeaseMs: INSTANCE_LEASE_MS,
  beatEveryMs: INSTANCE_LEASE_MS / 4,
  seatsTtlMs: 3_600_000,
};

const newInstanceId = () => randomBytes(9).toString('base64url');

/**
 * Every instance's sockets counted in Redis, so that a user's cap holds across the fleet. While
 * Redis is away (after one failed call, until a background probe gets an answer) every seat is
 * granted, so the cap holds per instance as without Redis.
 *
 * Whenever Redis may hold seats this instance no longer has (a seat given back while Redis could
 * not hear of it, a removal that failed, a Redis restarted from a snapshot older than some
 * releases), the instance takes a new name and drops its old key: every seat under the old name
 * stops counting at once, and the seats it holds are written under the new one. It does so when
 * the breaker's probe finds Redis back and after every reconnection.
 */
export class RedisSocketSeats implements SocketSeats {
  /** The seats this instance holds: seat number → its user. */
  private readonly held = new Map<number, string>();
  private instance = newInstanceId();
  /** A change of name under way (see `rename`). */
  private renaming: Promise<void> | undefined;
  /** The keys of names given up whose deletion has not been seen to succeed. */
  private retired: string[] = [];
  private taken = 0;
  private readonly seatsPrefix: string;
  private readonly instancesPrefix: string;
  private readonly breaker: CircuitBreaker;
  private readonly outage: OutageLog;
  private readonly timers: NodeJS.Timeout[];

  private constructor(
    private readonly redis: Redis,
    log: FastifyBaseLogger,
    prefix: string,
    private readonly timing: SeatTiming,
  ) {
    this.seatsPrefix = `${prefix}${SEATS_PREFIX}`;
    this.instancesPrefix = `${prefix}${INSTANCES_PREFIX}`;
    redis.defineCommand('takeSeat', { lua: TAKE, numberOfKeys: 1 });
    redis.defineCommand('registerSeats', { lua: REGISTER });
    redis.defineCommand('beatInstance', { lua: BEAT, numberOfKeys: 1 });
    this.outage = new OutageLog({
      dependency: 'Redis',
      meanwhile: "chat sockets are counted against each user's cap per instance",
      counted: (count) => `${count} chat ${count === 1 ? 'socket' : 'sockets'} seated meanwhile`,
      log,
      level: 'warn',
      reportEveryMs: 60_000,
      withStack: false,
    });
    this.breaker = new CircuitBreaker(
      () => this.rename(),
      () => {
        this.outage.answered();
        // Seats granted while the probe's last write was on its way.
        void this.attempt(() => this.registerHeld());
      },
    );
    // Every reconnection after this one: what Redis holds now is not known.
    redis.on('ready', () => void this.attempt(() => this.rename()));
    this.timers = [
      setInterval(() => void this.attempt(() => this.beat()), timing.beatEveryMs).unref(),
      setInterval(
        () => void this.attempt(() => this.registerHeld()),
        timing.seatsTtlMs / 4,
      ).unref(),
    ];
  }

  /**
   * Connects as the rate limits do (a command fails at once while Redis is away, never queues),
   * and marks the instance alive before any seat is taken: a seat of an instance without its key
   * would not count.
   */
  static async connect(
    url: string,
    log: FastifyBaseLogger,
    { silenceCheck = SILENCE_CHECK, prefix = '' }: RedisOptions = {},
    timing = SEAT_TIMING,
  ): Promise<RedisSocketSeats> {
    const redis = await failFastConnection(url, log, 'chat socket seats', silenceCheck);
    const seats = new RedisSocketSeats(redis, log, prefix, timing);
    await seats.attempt(() => seats.beat());
    return seats;
  }

  async take(userId: string): Promise<Seat | undefined> {
    const number = (this.taken += 1);
    if (this.breaker.isOpen) return this.seatMeanwhile(number, userId, undefined);
    try {
      const taken = await this.redis.takeSeat(
        this.seatsPrefix + userId,
        MAX_SOCKETS_PER_USER,
        this.seatName(number),
        this.instancesPrefix,
        this.timing.seatsTtlMs,
      );
      if (taken === 0) return undefined;
      return this.hold(number, userId);
    } catch (error) {
      // A TAKE that timed out may still run in Redis: the seat is held under the same name.
      this.breaker.trip();
      return this.seatMeanwhile(number, userId, error);
    }
  }

  /**
   * Shutdown (its seats were given back): the instance is gone at once, not after its lease, even
   * with the breaker open (a seat given back meanwhile went with it), if Redis takes the deletion.
   */
  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    this.breaker.stop();
    await this.redis.del(this.instanceKey, ...this.retired).catch(() => undefined);
    this.redis.disconnect();
  }

  private get instanceKey(): string {
    return this.instancesPrefix + this.instance;
  }

  private registerArgs(): [number, string] {
    return [this.timing.seatsTtlMs, this.instancesPrefix];
  }

  private seatName(number: number): string {
    return `${this.instance}:${number}`;
  }

  /** `cause`: the error that just opened the breaker, if this call met it. */
  private seatMeanwhile(number: number, userId: string, cause: unknown): Seat {
    this.outage.failed(cause);
    return this.hold(number, userId);
  }

  private hold(number: number, userId: string): Seat {
    this.held.set(number, userId);
    return { release: () => this.release(number) };
  }

  /**
   * Never fails. A seat Redis did not take back (it is away, or the removal failed) stops
   * counting when the instance renames itself, which the open breaker's probe does.
   */
  private async release(number: number): Promise<void> {
    const userId = this.held.get(number);
    if (userId === undefined) return; // given back already
    this.held.delete(number);
    await this.attempt(() => this.redis.srem(this.seatsPrefix + userId, this.seatName(number)));
  }

  /** Runs `call` unless Redis is known to be away; a failure opens the breaker. */
  private async attempt(call: () => Promise<unknown>): Promise<void> {
    if (this.breaker.isOpen) return;
    await call().catch((error: unknown) => {
      if (this.breaker.trip()) this.outage.failed(error);
    });
  }

  /** The instance is alive for another lease; if Redis had lost its key, it lost the seats too. */
  private async beat(): Promise<void> {
    const had = await this.redis.beatInstance(this.instanceKey, this.timing.instanceLeaseMs);
    if (had === 0) await this.registerHeld();
  }

  /**
   * A new name: the old one's key goes, and every seat under it with it; the seats held are
   * written under the new one (by its first beat). One at a time: a reconnection and the probe
   * may ask together.
   */
  private rename(): Promise<void> {
    this.renaming ??= (async () => {
      // Every name given up until one deletion succeeds: a rename that failed gave one up too.
      this.retired.push(this.instanceKey);
      this.instance = newInstanceId();
      await this.redis.del(...this.retired);
      this.retired = [];
      await this.beat();
    })().finally(() => {
      this.renaming = undefined;
    });
    return this.renaming;
  }

  /**
   * Every held seat written to Redis under the current name, in batches; rejects at a failure.
   * The map is walked live, not copied: a seat given back while an earlier batch is on its way is
   * no longer there, so no later batch writes it back after its removal.
   */
  private async registerHeld(): Promise<void> {
    let keys: string[] = [];
    let names: string[] = [];
    for (const [number, userId] of this.held) {
      keys.push(this.seatsPrefix + userId);
      names.push(this.seatName(number));
      if (keys.length < REGISTER_BATCH) continue;
      await this.redis.registerSeats(keys.length, ...keys, ...this.registerArgs(), ...names);
      [keys, names] = [[], []];
    }
    if (keys.length === 0) return;
    await this.redis.registerSeats(keys.length, ...keys, ...this.registerArgs(), ...names);
  }
}
