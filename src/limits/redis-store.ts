import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  ALLOWED,
  decide,
  longestWindow,
  type AllDecision,
  type Counted,
  type Decision,
  type Rule,
  type SlidingWindowStore,
} from './sliding-window.js';
import { REDIS_CONNECT_WAIT_MS, whenReady } from '../redis.js';

/**
 * Each key is a sorted set of events scored by time. CONSUME runs atomically in Redis, so two
 * instances cannot both take the last slot of a limit. It returns {} when it recorded the event,
 * or {index of the refusing rule, the event times in that rule's window}.
 */
const CONSUME = `
local key, now, member, retain = KEYS[1], tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - retain)
for i = 4, #ARGV, 2 do
  local limit, window = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local times = redis.call('ZRANGEBYSCORE', key, '(' .. (now - window), '+inf', 'WITHSCORES')
  if #times / 2 >= limit then
    local out = { (i - 4) / 2 }
    for j = 2, #times, 2 do out[#out + 1] = times[j] end
    return out
  end
end
redis.call('ZADD', key, now, member)
if redis.call('PTTL', key) < retain then redis.call('PEXPIRE', key, retain) end
return {}
`;

/**
 * CONSUME over several keys at once, all or nothing: ARGV is now, the member, then for each key its
 * retention, its number of rules and their (limit, window) pairs. Returns {} when it recorded the
 * event under every key, or {index of the refusing key, of its rule, the event times in that
 * rule's window}.
 */
const CONSUME_ALL = `
local now, member = tonumber(ARGV[1]), ARGV[2]
local at, retains = 3, {}
for k = 1, #KEYS do
  local retain, count = tonumber(ARGV[at]), tonumber(ARGV[at + 1])
  retains[k] = retain
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', now - retain)
  for r = 0, count - 1 do
    local limit, window = tonumber(ARGV[at + 2 + 2 * r]), tonumber(ARGV[at + 3 + 2 * r])
    local times = redis.call('ZRANGEBYSCORE', KEYS[k], '(' .. (now - window), '+inf', 'WITHSCORES')
    if #times / 2 >= limit then
      local out = { k - 1, r }
      for j = 2, #times, 2 do out[#out + 1] = times[j] end
      return out
    end
  end
  at = at + 2 + 2 * count
end
for k = 1, #KEYS do
  redis.call('ZADD', KEYS[k], now, member)
  if redis.call('PTTL', KEYS[k]) < retains[k] then redis.call('PEXPIRE', KEYS[k], retains[k]) end
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

const KEY_PREFIX = 'limits:';

export class RedisWindowStore implements SlidingWindowStore {
  constructor(private readonly redis: Redis) {}

  /**
   * Connects, waiting up to 2 s for Redis to be ready so the first calls need no fallback. A Redis
   * that is not there does not stop the service: the first call fails over to memory.
   */
  static async connect(url: string): Promise<RedisWindowStore> {
    const redis = new Redis(url, {
      // Fail a command at once while disconnected: the caller falls back to memory.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 500,
      connectTimeout: REDIS_CONNECT_WAIT_MS,
      retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    });
    redis.on('error', () => undefined); // the fallback store logs the outage, once
    await whenReady([redis]);
    return new RedisWindowStore(redis);
  }

  /** Resolves when Redis answers (within the command timeout). */
  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async consume(key: string, rules: readonly Rule[], now: number): Promise<Decision> {
    const event = member(now);
    const ruleArgs = rules.flatMap((r) => [r.limit, r.windowMs]);
    const reply = (await this.redis.eval(
      CONSUME,
      1,
      KEY_PREFIX + key,
      now,
      event,
      longestWindow(rules),
      ...ruleArgs,
    )) as (string | number)[];
    if (reply.length === 0) return { ...ALLOWED, event };
    const [index, ...times] = reply;
    return decide(times.map(Number), rules[Number(index)] as Rule, now);
  }

  async consumeAll(counted: readonly Counted[], now: number): Promise<AllDecision> {
    const event = member(now);
    const keyRules = counted.flatMap(({ rules }) => [
      longestWindow(rules),
      rules.length,
      ...rules.flatMap((r) => [r.limit, r.windowMs]),
    ]);
    const keys = counted.map(({ key }) => KEY_PREFIX + key);
    const reply = (await this.redis.eval(
      CONSUME_ALL,
      keys.length,
      ...keys,
      now,
      event,
      ...keyRules,
    )) as (string | number)[];
    if (reply.length === 0) return { allowed: true, events: counted.map(() => event) };
    const [keyIndex, ruleIndex, ...times] = reply.map(Number);
    const rules = counted[keyIndex as number]?.rules ?? [];
    return {
      allowed: false,
      refusedIndex: keyIndex as number,
      decision: decide(times, rules[ruleIndex as number] as Rule, now),
    };
  }

  async record(key: string, retainMs: number, now: number): Promise<void> {
    await this.redis.eval(RECORD, 1, KEY_PREFIX + key, retainMs, now, member(now));
  }

  async release(key: string, event: string): Promise<void> {
    await this.redis.zrem(KEY_PREFIX + key, event);
  }

  async clear(key: string): Promise<void> {
    await this.redis.del(KEY_PREFIX + key);
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** Sorted-set members must be unique; two events in the same millisecond are two events. */
function member(now: number): string {
  return `${now}:${randomBytes(6).toString('base64url')}`;
}
