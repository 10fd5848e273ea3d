import { describe, expect, it } from 'vitest';
import { hashConcurrency } from '../../src/security/password-hashing.js';

describe('hashConcurrency', () => {
  it('keeps one hash queued behind a pool whose every thread hashes (one per core)', () => {
    expect(hashConcurrency(2, 2)).toBe(3);
    expect(hashConcurrency(1, 1)).toBe(2);
    expect(hashConcurrency(8, 4)).toBe(5);
  });

  it('queues none when the pool has a spare thread, which would run it at once', () => {
    // Node's default pool of 4 threads on 2 cores: a third hash would run beside the two.
    expect(hashConcurrency(2, 4)).toBe(2);
    expect(hashConcurrency(1, 4)).toBe(1);
  });
});
