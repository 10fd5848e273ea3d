import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ServiceContext } from '../context.js';
import type { CodePurpose, Database } from '../db/tables.js';
import { CODE_TRY_DECOY_BUCKETS } from '../db/migrations/003_code_requests.js';
import { Errors } from '../errors.js';
import { CODE_MAX_TRIES, CODE_TTL_MS, generateCode } from '../security/one-time-codes.js';
import { normalizeEmail } from '../accounts/public-user.js';
import {
  consumeCode,
  replaceCodeIfDue,
  takeCodeTry,
  takeDecoyTry,
  type CodeRow,
} from './codes.store.js';

/** Compared against when no code was found, so that every guess computes one HMAC. */
const NO_CODE_HASH = '0'.repeat(64);

/**
 * The code of a request the outbox worker is sending (code-requests.ts), or undefined when the
 * rule of one code per `minGapMs` keeps the stored one (see replaceCodeIfDue).
 */
export async function issueRequestedCode(
  ctx: ServiceContext,
  userId: string,
  purpose: CodePurpose,
  rule: { requestedAt: number; minGapMs: number; retry: boolean },
): Promise<string | undefined> {
  const { code, row } = newCode(ctx, userId, purpose, rule.requestedAt);
  const stored = await replaceCodeIfDue(ctx.db, row, {
    minGapMs: rule.minGapMs,
    ownRetry: rule.retry,
  });
  return stored ? code : undefined;
}

/**
 * A fresh code, valid for 10 minutes from now; its `created_at` is when it was asked for (the
 * request's time when the outbox worker issues it later), which the one-per-minute rule compares.
 */
function newCode(ctx: ServiceContext, userId: string, purpose: CodePurpose, requestedAt: number) {
  const code = generateCode();
  const row: CodeRow = {
    user_id: userId,
    purpose,
    code_hash: ctx.codeHasher.hash(userId, purpose, code),
    failed_attempts: 0,
    expires_at: ctx.clock() + CODE_TTL_MS,
    created_at: requestedAt,
  };
  return { code, row };
}

/** The decoy row of an address: one per address, as a live code is, so contention matches too. */
function decoyBucket(email: string, purpose: CodePurpose): number {
  const digest = createHash('sha256')
    .update(`${purpose}\n${normalizeEmail(email)}`)
    .digest();
  return digest.readUInt32BE(0) % CODE_TRY_DECOY_BUCKETS;
}

/**
 * Checks a guess at the code sent to `email` (`userId` undefined: no such account) without
 * consuming it. The guess first takes one of the code's tries, and only then is compared (in
 * constant time). A guess that finds no live code (unknown address, none sent, expired, burnt)
 * takes a decoy try instead, so every guess runs the same statements and commits one changed row.
 * Returns the code, to be consumed with `consumeCheckedCode` in the transaction that applies it.
 */
export async function checkCode(
  ctx: ServiceContext,
  email: string,
  userId: string | undefined,
  purpose: CodePurpose,
  candidate: string,
): Promise<CodeRow> {
  const owner = userId ?? '';
  const taken = await takeCodeTry(ctx.db, owner, purpose, ctx.clock(), CODE_MAX_TRIES);
  await takeDecoyTry(ctx.db, taken === undefined ? decoyBucket(email, purpose) : undefined);
  const matches = ctx.codeHasher.matches(
    taken?.code_hash ?? NO_CODE_HASH,
    owner,
    purpose,
    candidate,
  );
  if (taken === undefined || !matches) throw Errors.invalidCode();
  return taken;
}

/** Consumes the checked code inside `trx`; a concurrent use that consumed it first makes this fail. */
export async function consumeCheckedCode(trx: Kysely<Database>, code: CodeRow): Promise<void> {
  if (!(await consumeCode(trx, code))) throw Errors.invalidCode();
}
