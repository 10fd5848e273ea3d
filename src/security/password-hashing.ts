import { availableParallelism } from 'node:os';
import { hash, parseOptions, verify } from '@node-rs/argon2';
import pLimit from 'p-limit';

const LIBUV_DEFAULT_POOL = 4;

/**
 * argon2id with OWASP's least memory per hash, m=7 MiB (its Password Storage Cheat Sheet lists
 * m=46/t=1, 19/2, 12/3, 9/4 and 7/5, all p=1, as equally strong), and more passes than its t=5:
 * t=9 is the fewest that cost no less CPU per hash than the former m=19 MiB/t=2 (11.1-11.5 ms
 * against 10.2-11.1 here), so a login's own work stays as small a share of it as before (with
 * t=5, ~7 ms a hash, login fell to 83-86 % of the raw hash rate). A hash's memory is held for its
 * whole life on every login: two in flight hold 14 MiB, not 38, which keeps the process under
 * 150 MiB (bench/README.md, "Where the memory goes").
 */
export const ARGON2_PARAMETERS = {
  algorithm: 2, // Algorithm.Argon2id; the enum is `const`, which isolatedModules cannot import.
  version: 1, // Version.V0x13, the current one (and the library's default).
  memoryCost: 7_168,
  timeCost: 9,
  parallelism: 1,
} as const;

/**
 * How many hashes the service keeps in flight. At most one runs per core: more would not finish
 * sooner (the work is CPU-bound) but would hold 7 MiB each and crowd the event loop's thread off
 * the CPU. Never more run than libuv's pool has threads (main.cts sizes it to the cores), so other
 * pool work (DNS lookups) waits at most about one hash's time (~12 ms) for a thread.
 *
 * When every pool thread is hashing, one more hash waits in libuv's own queue: a thread that
 * finishes a hash then starts the next at once, instead of idling until the event loop gets round
 * to the finished one and hands it the next login. A queued hash holds no working memory (it is
 * allocated when the hash starts). Measured on PostgreSQL + Redis, where each login's round trips
 * keep the event loop busier: 82.0-84.4 % of the raw hash rate with two in flight on two cores,
 * 85.5-89.2 % with three; on SQLite 96-97 % either way, with the same peak RSS.
 */
export function hashConcurrency(cores: number, poolThreads: number): number {
  const running = Math.max(1, Math.min(cores, poolThreads));
  // A pool with a spare thread would run the extra hash at once, not queue it.
  return poolThreads <= running ? running + 1 : running;
}

/**
 * The hashes in flight for libuv's pool of `poolThreads` (config.ts: UV_THREADPOOL_SIZE, which
 * main.cts sets to the cores; unset, libuv's default) on this machine's cores.
 */
export const hashConcurrencyFor = (poolThreads = LIBUV_DEFAULT_POOL): number =>
  hashConcurrency(availableParallelism(), poolThreads);

export type HashTimer = (operation: 'hash' | 'verify', seconds: number) => void;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * False for a wrong password. A failure to compute (or a malformed stored hash) is an error, not
   * a wrong password: it must not look like one to the user, nor count against their limits.
   */
  verify(storedHash: string, password: string): Promise<boolean>;
  /**
   * True when the stored hash was made with other parameters than today's, weaker or not: a login
   * then rehashes it, so every account moves to today's cost (and memory per hash) in time.
   */
  needsRehash(storedHash: string): boolean;
  /** Verifies against a throw-away hash, so an unknown e-mail costs as much as a wrong password. */
  verifyDummy(password: string): Promise<void>;
}

/**
 * argon2id through @node-rs/argon2, which computes on libuv's thread pool: the event loop keeps
 * serving other requests while a hash runs.
 */
export async function createPasswordHasher(
  onTiming: HashTimer = () => undefined,
  concurrency = hashConcurrencyFor(),
): Promise<PasswordHasher> {
  const slots = pLimit(concurrency);
  const timed = <T>(operation: 'hash' | 'verify', work: () => Promise<T>): Promise<T> =>
    slots(async () => {
      const started = process.hrtime.bigint();
      try {
        return await work();
      } finally {
        onTiming(operation, Number(process.hrtime.bigint() - started) / 1e9);
      }
    });
  const dummyHash = await hash('dummy password for unknown accounts', ARGON2_PARAMETERS);
  const hasher: PasswordHasher = {
    // Text with an unpaired surrogate is not a password: argon2 hashes its UTF-8 bytes, and
    // encoding turns every unpaired surrogate into U+FFFD, so two such texts would hash alike.
    // The password policy refuses it; verifying it answers "wrong".
    hash(password) {
      if (!password.isWellFormed()) throw new Error('refusing to hash ill-formed text');
      return timed('hash', () => hash(password, ARGON2_PARAMETERS));
    },
    async verify(storedHash, password) {
      // Wrong, after the same work as any wrong password (see hash).
      const wellFormed = password.isWellFormed();
      const matches = await timed('verify', () =>
        verify(wellFormed ? storedHash : dummyHash, password),
      );
      return wellFormed && matches;
    },
    needsRehash(storedHash) {
      try {
        const used = parseOptions(storedHash);
        return (
          used.algorithm !== ARGON2_PARAMETERS.algorithm ||
          used.version !== ARGON2_PARAMETERS.version ||
          used.memoryCost !== ARGON2_PARAMETERS.memoryCost ||
          used.timeCost !== ARGON2_PARAMETERS.timeCost ||
          used.parallelism !== ARGON2_PARAMETERS.parallelism
        );
      } catch {
        return true;
      }
    },
    async verifyDummy(password) {
      await hasher.verify(dummyHash, password);
    },
  };
  return hasher;
}
