import { createHash } from 'node:crypto';
import { normalizeEmail } from '../accounts/public-user.js';
import type { CodePurpose } from '../db/tables.js';
import { Errors } from '../errors.js';
import { clientNetwork } from './client-network.js';
import type { Counter, Decision, Rule, SlidingWindowStore } from './sliding-window.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Every limit of API.md, named, with its numbers in one place. */
export const LIMITS = {
  authRequestsPerIp: { limit: 300, windowMs: MINUTE },
  failedLoginsPerIp: { limit: 30, windowMs: MINUTE },
  failedLoginsPerAccountMinute: { limit: 10, windowMs: MINUTE },
  failedLoginsPerAccountHour: { limit: 100, windowMs: HOUR },
  wrongCurrentPasswords: { limit: 5, windowMs: 15 * MINUTE },
  /**
   * Not in API.md: every check of a signed-in account's current password (change-password,
   * account deletion), right ones included, costs a hash. A valid token is never counted against
   * the per-IP budget, so without this one account could keep the hashing pool, which every login
   * waits for, busy. Ten a minute is more than anyone types.
   */
  currentPasswordChecks: { limit: 10, windowMs: MINUTE },
  codeSendsPerAddress: { limit: 1, windowMs: MINUTE },
  followChangesPerUser: { limit: 100, windowMs: HOUR },
  chatSendsPerConversation: { limit: 10, windowMs: 10_000 },
  chatSendsPerUser: { limit: 60, windowMs: MINUTE },
  conversationStartsPerUser: { limit: 20, windowMs: HOUR },
  /** Typing events relayed by the chat socket; extras are dropped, not refused. */
  typingPerConversation: { limit: 1, windowMs: 3_000 },
  /**
   * And across conversations: each counted frame may cost a membership lookup, and a frame may
   * name any id (one made up per frame never meets the per-conversation limit). 20 in 10 s is
   * typing in six conversations at once.
   */
  typingPerUser: { limit: 20, windowMs: 10_000 },
  /** Not a limit on people: one send per client_message_id counts against the chat limits. */
  chatKeyClaims: { limit: 1, windowMs: MINUTE },
} as const;

const LOGIN_FAILURES_PER_IP = [LIMITS.failedLoginsPerIp];
const LOGIN_FAILURES_PER_ACCOUNT = [
  LIMITS.failedLoginsPerAccountMinute,
  LIMITS.failedLoginsPerAccountHour,
];

/** The chat rules, which a test (or the benchmark) may raise through `AppOverrides`. */
export type ChatLimitRules = Pick<
  Record<keyof typeof LIMITS, Rule>,
  'chatSendsPerConversation' | 'chatSendsPerUser' | 'conversationStartsPerUser'
>;

/**
 * The key of a per-IP limit: every per-IP limit builds its key here, so each counts an IPv6 client
 * by its /64 and an IPv4-mapped address as its IPv4 address.
 */
function ipKey(limit: string, ip: string): string {
  return `${limit}:${clientNetwork(ip)}`;
}

/** Addresses are hashed into keys, so a shared Redis holds no e-mail addresses. */
function addressKey(email: string): string {
  return createHash('sha256').update(normalizeEmail(email)).digest('base64url').slice(0, 22);
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

/**
 * `takeBack` undoes the failure counted, for a right password; `takeBackAll` everything counted,
 * for a check that could not run (by default the same).
 */
function countedAttempt(
  takeBack: () => Promise<void>,
  takeBackAll: () => Promise<void> = takeBack,
): CountedAttempt {
  return {
    async check(run) {
      let result;
      try {
        result = await run();
      } catch (error) {
        await takeBackAll();
        throw error;
      }
      if (result !== undefined) await takeBack();
      return result;
    },
  };
}

const keysOf = (counters: readonly Counter[]) => counters.map(({ key }) => key);

/** A send begun (see `Limits.beginChatSend`). */
export interface ChatSendStart {
  /** The first send of its key within the minute: counted against the chat limits already. */
  readonly first: boolean;
  /** Takes back what beginning counted (the send did not commit, or was a replay). */
  release(): Promise<void>;
}

export class Limits {
  constructor(
    private readonly store: SlidingWindowStore,
    private readonly clock: () => number,
    private readonly chatRules: ChatLimitRules = LIMITS,
  ) {}

  /** Counts one unauthenticated request from `ip` (the full client address; see `ipKey`). */
  async takeAuthRequest(ip: string): Promise<void> {
    const key = ipKey('auth-requests', ip);
    const decision = await this.store.consume(key, [LIMITS.authRequestsPerIp], this.clock());
    if (!decision.allowed) throw Errors.rateLimited(decision.retryAfterSeconds);
  }

  /**
   * Counts a login attempt as failed against its IP and its address (registered or not), or
   * refuses it while either is locked out. Both counters are checked and counted at once, in one
   * round trip: a refused attempt counts against neither.
   */
  async beginLoginAttempt(email: string, ip: string): Promise<CountedAttempt> {
    const counters = [
      { key: ipKey('login-failures-ip', ip), rules: LOGIN_FAILURES_PER_IP },
      { key: `login-failures:${addressKey(email)}`, rules: LOGIN_FAILURES_PER_ACCOUNT },
    ];
    const decision = await this.store.consumeAll(counters, this.clock());
    if (!decision.allowed) {
      const { refused, retryAfterSeconds } = decision;
      throw refused === 0
        ? Errors.rateLimited(retryAfterSeconds)
        : Errors.tooManyAttempts(retryAfterSeconds);
    }
    return countedAttempt(() => this.store.releaseAll(keysOf(counters), decision.event));
  }

  async liftLoginLockout(email: string): Promise<void> {
    await this.store.clear(`login-failures:${addressKey(email)}`);
  }

  /**
   * Counts an attempt at the current password as wrong, or refuses it once 5 wrong ones were given
   * within 15 minutes (the right password included: `429 too_many_attempts`); and counts it as a
   * check, right or wrong, refusing an 11th within a minute (`429 rate_limited`). One round trip.
   */
  async beginPasswordAttempt(userId: string): Promise<CountedAttempt> {
    const wrong = `wrong-passwords:${userId}`;
    const counters = [
      { key: wrong, rules: [LIMITS.wrongCurrentPasswords] },
      { key: `password-checks:${userId}`, rules: [LIMITS.currentPasswordChecks] },
    ];
    const decision = await this.store.consumeAll(counters, this.clock());
    if (!decision.allowed) {
      const { refused, retryAfterSeconds } = decision;
      throw refused === 0
        ? Errors.tooManyAttempts(retryAfterSeconds)
        : Errors.rateLimited(retryAfterSeconds);
    }
    return countedAttempt(
      () => this.store.release(wrong, decision.event),
      () => this.store.releaseAll(keysOf(counters), decision.event),
    );
  }

  async clearWrongPasswords(userId: string): Promise<void> {
    await this.store.clear(`wrong-passwords:${userId}`);
  }

  /**
   * One code e-mail per address and purpose per minute, registered or not. Runs `request` with the
   * time it counted the request at (the request's time, which the outbox compares again:
   * code-requests.ts), and takes the count back if `request` fails: nothing was queued, so a
   * retry must not wait out the minute.
   */
  async withCodeSend<T>(
    email: string,
    purpose: CodePurpose,
    request: (requestedAt: number) => Promise<T>,
  ): Promise<T> {
    const key = `code-sends:${purpose}:${addressKey(email)}`;
    const now = this.clock();
    const decision = await this.store.consume(key, [LIMITS.codeSendsPerAddress], now);
    if (!decision.allowed) throw Errors.tooManyRequests(decision.retryAfterSeconds);
    try {
      return await request(now);
    } catch (error) {
      await this.release(key, decision);
      throw error;
    }
  }

  /** The registration e-mail is always sent, and starts the window. */
  async recordCodeSend(email: string, purpose: CodePurpose): Promise<void> {
    const key = `code-sends:${purpose}:${addressKey(email)}`;
    await this.store.record(key, LIMITS.codeSendsPerAddress.windowMs, this.clock());
  }

  /** A chat message's two budgets: its sender's in the conversation, and overall. */
  private chatSendCounts(userId: string, conversationId: string): Counter[] {
    return [
      {
        key: `chat-sends:${userId}:${conversationId}`,
        rules: [this.chatRules.chatSendsPerConversation],
      },
      { key: `chat-sends:${userId}`, rules: [this.chatRules.chatSendsPerUser] },
    ];
  }

  /**
   * Counts a chat message against its sender's budgets for the conversation and overall (both at
   * once: one round trip to Redis). The returned function takes it back (the send turned out to be
   * a replay, or did not commit).
   */
  async takeChatSend(userId: string, conversationId: string): Promise<() => Promise<void>> {
    const counters = this.chatSendCounts(userId, conversationId);
    const outcome = await this.store.consumeAll(counters, this.clock());
    if (!outcome.allowed) throw Errors.chatRateLimited(outcome.retryAfterSeconds);
    return () => this.store.releaseAll(keysOf(counters), outcome.event);
  }

  /**
   * Starts a send: marks the sender's `client_message_id` as being sent and, if it is the first
   * send of that key within the minute, counts the message against the chat budgets, all in one
   * step (one round trip to Redis). `first` is false when another send with the key started within
   * the last minute: then this one is most likely its duplicate, must not spend a slot of the
   * limits that the first one holds before the database has said so, and nothing is counted
   * (`takeChatSend` counts it once the write gets past the unique index). A first send over a
   * limit counts nothing and throws `429 rate_limited`. `release` takes back what was counted.
   */
  async beginChatSend(
    userId: string,
    clientMessageId: string,
    conversationId: string,
  ): Promise<ChatSendStart> {
    const counters = [
      { key: `chat-key:${userId}:${clientMessageId}`, rules: [LIMITS.chatKeyClaims] },
      ...this.chatSendCounts(userId, conversationId),
    ];
    const outcome = await this.store.consumeAll(counters, this.clock());
    if (outcome.allowed) {
      const { event } = outcome;
      return { first: true, release: () => this.store.releaseAll(keysOf(counters), event) };
    }
    if (outcome.refused === 0) return { first: false, release: async () => undefined };
    throw Errors.chatRateLimited(outcome.retryAfterSeconds);
  }

  /** Counts a new conversation against its starter's hourly budget; the function takes it back. */
  async takeConversationStart(userId: string): Promise<() => Promise<void>> {
    const key = `conversation-starts:${userId}`;
    const rule = this.chatRules.conversationStartsPerUser;
    const decision = await this.store.consume(key, [rule], this.clock());
    if (!decision.allowed) throw Errors.chatRateLimited(decision.retryAfterSeconds);
    return () => this.release(key, decision);
  }

  /**
   * Counts one follow or unfollow that really changed something (calls that change nothing are
   * never counted), or refuses it. The returned function takes it back, for a change that was
   * counted but then not made.
   */
  async takeFollowChange(userId: string): Promise<() => Promise<void>> {
    const key = `follow-changes:${userId}`;
    const decision = await this.store.consume(key, [LIMITS.followChangesPerUser], this.clock());
    if (!decision.allowed) throw Errors.tooManyChanges(decision.retryAfterSeconds);
    return () => this.release(key, decision);
  }

  /**
   * Counts a typing event of `userId` in a conversation; false for one within 3 s of the last
   * there, or beyond the user's 20 in 10 s across conversations.
   */
  async takeTyping(userId: string, conversationId: string): Promise<boolean> {
    const counters = [
      { key: `typing:${userId}:${conversationId}`, rules: [LIMITS.typingPerConversation] },
      { key: `typing-user:${userId}`, rules: [LIMITS.typingPerUser] },
    ];
    return (await this.store.consumeAll(counters, this.clock())).allowed;
  }

  private async release(key: string, decision: Decision): Promise<void> {
    if (decision.event !== undefined) await this.store.release(key, decision.event);
  }
}
