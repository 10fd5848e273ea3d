import { availableParallelism } from 'node:os';
import { hash, parseOptions, verify } from '@node-rs/argon2';
import pLimit from 'p-limit';

const LIBUV_DEFAULT_POOL = 4;

/** OWASP's argon2id minimum (19 MiB, t=2, p=1). */
export const ARGON2_PARAMETERS = {
  algorithm: 2, // Algorithm.Argon2id; the enum is `const`, which isolatedModules cannot import.
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
} as const;

/**
 * At most one hash per core at a time; the rest wait in line. More would not finish sooner (the
 * work is CPU-bound) but would hold 19 MiB each and crowd the event loop's thread off the CPU.
 * Never more than libuv's pool has threads (main.cts sizes it), so that other pool work (JWT
 * signing, DNS) never waits behind more than one hash.
 */
export const HASH_CONCURRENCY = Math.max(
  1,
  Math.min(availableParallelism(), Number(process.env.UV_THREADPOOL_SIZE) || LIBUV_DEFAULT_POOL),
);

export type HashTimer = (operation: 'hash' | 'verify', seconds: number) => void;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * False for a wrong password. A failure to compute (or a malformed stored hash) is an error, not
   * a wrong password: it must not look like one to the user, nor count against their limits.
   */
  verify(storedHash: string, password: string): Promise<boolean>;
  /** True when the stored hash used weaker parameters than today's. */
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
): Promise<PasswordHasher> {
  const slots = pLimit(HASH_CONCURRENCY);
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
    hash: (password) => timed('hash', () => hash(password, ARGON2_PARAMETERS)),
    verify: (storedHash, password) => timed('verify', () => verify(storedHash, password)),
    needsRehash(storedHash) {
      try {
        const used = parseOptions(storedHash);
        return (
          used.algorithm !== ARGON2_PARAMETERS.algorithm ||
          used.memoryCost < ARGON2_PARAMETERS.memoryCost ||
          used.timeCost < ARGON2_PARAMETERS.timeCost
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
