import { createHash } from 'node:crypto';
import type { CodePurpose } from '../db/tables.js';
import { Errors } from '../errors.js';
import type { Decision, SlidingWindowStore } from './sliding-window.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Every limit of API.md, named, with its numbers in one place. */
export const LIMITS = {
  authRequestsPerIp: { limit: 300, windowMs: MINUTE },
  failedLoginsPerIp: { limit: 30, windowMs: MINUTE },
  failedLoginsPerAccountMinute: { limit: 10, windowMs: MINUTE },
  failedLoginsPerAccountHour: { limit: 100, windowMs: HOUR },
  wrongCurrentPasswords: { limit: 5, windowMs: 15 * MINUTE },
  codeSendsPerAddress: { limit: 1, windowMs: MINUTE },
} as const;

/** Addresses are hashed into keys, so a shared Redis holds no e-mail addresses. */
function addressKey(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('base64url').slice(0, 22);
}

/**
 * An attempt counted as failed before its outcome is known, so concurrent attempts cannot all slip
 * under a limit while their passwords are being hashed.
 */
export interface CountedAttempt {
  /**
   * Runs the password check. `undefined` (wrong password) leaves the attempt counted; a result, or
   * an error (the check could not run, e.g. the database is away), takes it back.
   */
  check<T>(run: () => Promise<T | undefined>): Promise<T | undefined>;
}

function countedAttempt(takeBack: () => Promise<void>): CountedAttempt {
  return {
    async check(run) {
      let result;
      try {
        result = await run();
      } catch (error) {
        await takeBack();
        throw error;
      }
      if (result !== undefined) await takeBack();
      return result;
    },
  };
}

export class Limits {
  constructor(
    private readonly store: SlidingWindowStore,
    private readonly clock: () => number,
  ) {}

  /** Counts one request to an unauthenticated Auth endpoint from `ip`. */
  async takeAuthRequest(ip: string): Promise<void> {
    const decision = await this.store.consume(
      `auth-requests:${ip}`,
      [LIMITS.authRequestsPerIp],
      this.clock(),
    );
    if (!decision.allowed) throw Errors.rateLimited(decision.retryAfterSeconds);
  }

  /**
   * Counts a login attempt as failed against its IP and its address (registered or not), or
   * refuses it while either is locked out.
   */
  async beginLoginAttempt(email: string, ip: string): Promise<CountedAttempt> {
    const now = this.clock();
    const ipKey = `login-failures-ip:${ip}`;
    const ipDecision = await this.store.consume(ipKey, [LIMITS.failedLoginsPerIp], now);
    if (!ipDecision.allowed) throw Errors.rateLimited(ipDecision.retryAfterSeconds);
    const accountKey = `login-failures:${addressKey(email)}`;
    const accountRules = [LIMITS.failedLoginsPerAccountMinute, LIMITS.failedLoginsPerAccountHour];
    const accountDecision = await this.store.consume(accountKey, accountRules, now);
    if (!accountDecision.allowed) {
      await this.release(ipKey, ipDecision);
      throw Errors.tooManyAttempts(accountDecision.retryAfterSeconds);
    }
    return countedAttempt(async () => {
      await this.release(ipKey, ipDecision);
      await this.release(accountKey, accountDecision);
    });
  }

  async liftLoginLockout(email: string): Promise<void> {
    await this.store.clear(`login-failures:${addressKey(email)}`);
  }

  /**
   * Counts an attempt at the current password as wrong, or refuses it once 5 wrong ones were given
   * within 15 minutes (the right password included).
   */
  async beginPasswordAttempt(userId: string): Promise<CountedAttempt> {
    const key = `wrong-passwords:${userId}`;
    const decision = await this.store.consume(key, [LIMITS.wrongCurrentPasswords], this.clock());
    if (!decision.allowed) throw Errors.tooManyAttempts(decision.retryAfterSeconds);
    return countedAttempt(() => this.release(key, decision));
  }

  async clearWrongPasswords(userId: string): Promise<void> {
    await this.store.clear(`wrong-passwords:${userId}`);
  }

  /** One code e-mail per address and purpose per minute, registered or not. */
  async takeCodeSend(email: string, purpose: CodePurpose): Promise<void> {
    const key = `code-sends:${purpose}:${addressKey(email)}`;
    const decision = await this.store.consume(key, [LIMITS.codeSendsPerAddress], this.clock());
    if (!decision.allowed) throw Errors.tooManyRequests(decision.retryAfterSeconds);
  }

  /** The registration e-mail is always sent, and starts the window. */
  async recordCodeSend(email: string, purpose: CodePurpose): Promise<void> {
    const key = `code-sends:${purpose}:${addressKey(email)}`;
    await this.store.record(key, LIMITS.codeSendsPerAddress.windowMs, this.clock());
  }

  private async release(key: string, decision: Decision): Promise<void> {
    if (decision.event !== undefined) await this.store.release(key, decision.event);
  }
}
