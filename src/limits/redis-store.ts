import type { FastifyBaseLogger } from 'fastify';
import type { Redis, Result } from 'ioredis';
import {
  eventName,
  longestWindow,
  retryAfterSeconds,
  singleDecision,
  type Counter,
  type Decision,
  type JointDecision,
  type Rule,
  type SlidingWindowStore,
} from './sliding-window.js';
import { failFastConnection, SILENCE_CHECK, type RedisOptions } from '../redis.js';

/**
 * Each key is a sorted set of events scored by time. CONSUME runs atomically in Redis, so two
 * instances cannot both take the last slot of a limit, and checks several keys (counters) in one
 * round trip. ARGV: now, the event's member, then for each key its retention (longest window), its
 * number of rules and their limits and windows. It returns {} when it recorded the event in every
 * key, or {index of the first refusing key, milliseconds until every rule of every key allows one
 * more} when it recorded none. Counting with ZCOUNT, an event time is only read for a refusal:
 * the one whose ageing out frees the rule's window.
 */
const CONSUME = `
local now, member, at, retains, refused, wait = tonumber(ARGV[1]), ARGV[2], 3, {}, -1, 0
for k, key in ipairs(KEYS) do
  local retain, rules = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  retains[k] = retain
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - retain)
  for r = 0, rules - 1 do
    local limit, window = tonumber(ARGV[at + 2 + 2 * r]), tonumber(ARGV[at + 3 + 2 * r])
    local since = '(' .. (now - window)
    local count = redis.call('ZCOUNT', key, since, '+inf')
    if count >= limit then
      local pivot = redis.call('ZRANGEBYSCORE', key, since, '+inf', 'WITHSCORES', 'LIMIT', count - limit, 1)
      wait = math.max(wait, tonumber(pivot[2]) + window - now)
      if refused < 0 then refused = k - 1 end
    end
  end
  at = at + 2 + 2 * rules
end
if refused >= 0 then return { refused, wait } end
for k, key in ipairs(KEYS) do
  redis.call('ZADD', key, now, member)
  if redis.call('PTTL', key) < retains[k] then redis.call('PEXPIRE', key, retains[k]) end
end
return {}
`;

const RECORD = `
local key, retain, now, member = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - retain)
redis.call('ZADD', key, now, member)
if redis.call('PTTL', key) < retain then redis.call('PEXPIRE', key, retain) end
return 1
`;

const RELEASE = `
for _, key in ipairs(KEYS) do redis.call('ZREM', key, ARGV[1]) end
return 1
`;

/** The scripts, sent once and then run by their SHA1 (ioredis's EVALSHA, EVAL after a NOSCRIPT). */
declare module 'ioredis' {
  interface RedisCommander<Context> {
    consumeWindows(...keysThenArgs: (string | number)[]): Result<(string | number)[], Context>;
    recordWindow(key: string, ...args: (string | number)[]): Result<number, Context>;
    releaseWindows(...keysThenArgs: (string | number)[]): Result<number, Context>;
  }
}

/** A counter's key is `<REDIS_PREFIX>limits:<key>`. */
const KEY_PREFIX = 'limits:';
/** The probes' key: one member, gone a second after the last probe. */
const PROBE_KEY = 'probe';
const PROBE_RETAIN_MS = 1_000;

export class RedisWindowStore implements SlidingWindowStore {
  private readonly keyPrefix: string;

  constructor(
    private readonly redis: Redis,
    prefix = '',
  ) {
    this.keyPrefix = `${prefix}${KEY_PREFIX}`;
    redis.defineCommand('consumeWindows', { lua: CONSUME });
    redis.defineCommand('recordWindow', { lua: RECORD, numberOfKeys: 1 });
    redis.defineCommand('releaseWindows', { lua: RELEASE });
  }

  /**
   * Connects, waiting up to 2 s for Redis to be ready so the first calls need no fallback. A Redis
   * that is not there does not stop the service: the first call fails over to memory.
   */
  static async connect(
    url: string,
    log: FastifyBaseLogger,
    { silenceCheck = SILENCE_CHECK, prefix = '' }: RedisOptions = {},
  ): Promise<RedisWindowStore> {
    const redis = await failFastConnection(url, log, 'rate limits', silenceCheck);
    return new RedisWindowStore(redis, prefix);
  }

  /**
   * Resolves when Redis takes a write (within the command timeout). A PING is answered even while
   * every write is refused (a replica after a failover: READONLY; `maxmemory` reached: OOM; a
   * failed save: MISCONF), which would close the fallback's breaker only to open it again.
   */
  async takesWrites(): Promise<void> {
    await this.redis.recordWindow(this.keyPrefix + PROBE_KEY, PROBE_RETAIN_MS, Date.now(), 'probe');
  }

  async consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    return singleDecision(await this.consumeAll([{ key, rules }], now));
  }

  async consumeAll(
    counters: readonly Counter[],
    now: number,
    event = eventName(now),
  ): Promise<JointDecision> {
    const args: (string | number)[] = [counters.length];
    for (const { key } of counters) args.push(this.keyPrefix + key);
    args.push(now, event);
    for (const { rules } of counters) {
      args.push(longestWindow(rules), rules.length);
      for (const rule of rules) args.push(rule.limit, rule.windowMs);
    }
    const reply = await this.redis.consumeWindows(...args);
    if (reply.length === 0) return { allowed: true, event };
    const [refused, waitMs] = reply.map(Number) as [number, number];
    return { allowed: false, refused, retryAfterSeconds: retryAfterSeconds(waitMs) };
  }

  async record(key: string, retainMs: number, now: number, event = eventName(now)): Promise<void> {
    await this.redis.recordWindow(this.keyPrefix + key, retainMs, now, event);
  }

  async release(key: string, event: string): Promise<void> {
    await this.redis.zrem(this.keyPrefix + key, event);
  }

  async releaseAll(keys: readonly string[], event: string): Promise<void> {
    await this.redis.releaseWindows(keys.length, ...keys.map((key) => this.keyPrefix + key), event);
  }

  async clear(key: string): Promise<void> {
    await this.redis.del(this.keyPrefix + key);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
