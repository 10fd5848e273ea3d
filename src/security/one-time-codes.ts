import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { CodePurpose } from '../db/tables.js';

export const CODE_TTL_MS = 10 * 60_000;
/** Every guess takes a try before it is compared; the code is burnt once all are taken. */
export const CODE_MAX_TRIES = 5;

/** A 6-digit code from the CSPRNG; only its keyed hash is ever stored. */
export function generateCode(): string {
  return randomInt(0, 1_000_000).toString().padStart(6, '0');
}

export interface CodeHasher {
  hash(userId: string, purpose: CodePurpose, code: string): string;
  /** Constant-time comparison of a candidate code with a stored hash. */
  matches(storedHash: string, userId: string, purpose: CodePurpose, candidate: string): boolean;
}

/** HMAC-SHA-256 under a key derived from APP_SECRET, bound to the user and purpose. */
export function createCodeHasher(key: Buffer): CodeHasher {
  const hash = (userId: string, purpose: CodePurpose, code: string) =>
    createHmac('sha256', key).update(`${purpose}\n${userId}\n${code}`).digest('hex');
  return {
    hash,
    matches(storedHash, userId, purpose, candidate) {
      const expected = Buffer.from(storedHash, 'hex');
      const actual = Buffer.from(hash(userId, purpose, candidate), 'hex');
      return expected.length === actual.length && timingSafeEqual(expected, actual);
    },
  };
}
