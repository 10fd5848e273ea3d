import { randomBytes } from 'node:crypto';

/**
 * Sliding-window counters: each event is kept with its time, and a limit counts the events of the
 * last `windowMs`, so a burst that straddles a clock minute is still caught. Two stores implement
 * this: memory (one instance) and Redis (shared by every instance).
 */
export interface Rule {
  readonly limit: number;
  readonly windowMs: number;
}

export interface Decision {
  readonly allowed: boolean;
  /** When `allowed` is false: seconds until one more event would be allowed. */
  readonly retryAfterSeconds: number;
  /** When `allowed`: the recorded event, which `release` can take back. */
  readonly event?: string;
}

/** One of the counters a `consumeAll` checks and records together. */
export interface Counter {
  readonly key: string;
  readonly rules: readonly Rule[];
}

export type JointDecision =
  /** `event` was recorded in every counter; `releaseAll` takes it back. */
  | { readonly allowed: true; readonly event: string }
  /**
   * Nothing was recorded: `refused` is the index of the first counter at a limit, and
   * `retryAfterSeconds` the wait until every counter allows one more (the longest refusal's).
   */
  | { readonly allowed: false; readonly refused: number; readonly retryAfterSeconds: number };

export interface SlidingWindowStore {
  /**
   * Atomically: records an event at `now` unless one of `rules` is already at its limit. The event
   * is kept as long as the longest rule's window.
   */
  consume(key: string, rules: readonly Rule[], now: number): Promise<Decision>;
  /**
   * Atomically, for several counters at once (one round trip to Redis): records an event at `now`
   * in each, unless one of them is already at a limit of its rules; then none is recorded. The
   * event is named `event` when given (see eventName, memoryEventName), else by the store.
   */
  consumeAll(counters: readonly Counter[], now: number, event?: string): Promise<JointDecision>;
  /**
   * Records an event unconditionally, kept for `retainMs`; as `event` when given (an event another
   * store recorded, so that a release of it finds it here too).
   */
  record(key: string, retainMs: number, now: number, event?: string): Promise<void>;
  /** Takes back one event recorded by `consume` (an attempt that turned out not to count). */
  release(key: string, event: string): Promise<void>;
  /** Takes back the event of a `consumeAll` from each of its counters' keys. */
  releaseAll(keys: readonly string[], event: string): Promise<void>;
  clear(key: string): Promise<void>;
  close(): Promise<void>;
}

/** A unique name for an event at `now`, as Redis keeps it: two in one millisecond are two. */
export function eventName(now: number): string {
  return `${now}:${randomBytes(6).toString('base64url')}`;
}

/**
 * The name of an event memory counted while Redis was away (written to Redis under it when Redis
 * answers again): memory keeps times only, and finds the event to take back by the time in it.
 */
export function memoryEventName(now: number): string {
  return `${now}:memory:${randomBytes(6).toString('base64url')}`;
}

/**
 * The time of an event memory counted (its own `String(now)`, or a `memoryEventName`), else
 * undefined: an event Redis counted is none of memory's, even one of the same millisecond.
 */
export function memoryEventTime(event: string): number | undefined {
  const time = /^(\d+)(?::memory:[\w-]+)?$/.exec(event)?.[1];
  return time === undefined ? undefined : Number(time);
}

const ALLOWED: Decision = Object.freeze({ allowed: true, retryAfterSeconds: 0 });

/** A single counter's `Decision`, from the `JointDecision` of a `consumeAll` of that counter alone. */
export function singleDecision(joint: JointDecision): Decision {
  return joint.allowed
    ? { ...ALLOWED, event: joint.event }
    : { allowed: false, retryAfterSeconds: joint.retryAfterSeconds };
}

export function longestWindow(rules: readonly Rule[]): number {
  return Math.max(...rules.map((r) => r.windowMs));
}

/**
 * The decision for sorted event times (older ones may precede the window): refused until the
 * oldest event that keeps the window at its limit ages out.
 */
function decide(sortedTimes: readonly number[], rule: Rule, now: number): Decision {
  let first = 0;
  while (first < sortedTimes.length && (sortedTimes[first] as number) <= now - rule.windowMs)
    first++;
  if (sortedTimes.length - first < rule.limit) return ALLOWED;
  const pivot = sortedTimes[sortedTimes.length - rule.limit] as number;
  return { allowed: false, retryAfterSeconds: retryAfterSeconds(pivot + rule.windowMs - now) };
}

/** `Retry-After` for a wait of `waitMs`: whole seconds, at least 1. */
export function retryAfterSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/**
 * ALLOWED, or the refusal that lasts longest among `rules`: one more event is allowed only once
 * every rule allows it (10 failed logins in a minute and 100 in the hour wait for the hour's).
 */
export function decideAll(
  sortedTimes: readonly number[],
  rules: readonly Rule[],
  now: number,
): Decision {
  let longest: Decision = ALLOWED;
  for (const rule of rules) {
    const decision = decide(sortedTimes, rule, now);
    if (!decision.allowed && decision.retryAfterSeconds > longest.retryAfterSeconds)
      longest = decision;
  }
  return longest;
}
