import type { Caller } from '../accounts/caller.js';
import { findUserById } from '../accounts/users.store.js';
import type { ServiceContext } from '../context.js';
import type { Db } from '../db/database.js';
import { isForeignKeyViolation } from '../db/dialect.js';
import { canonicalRowId } from '../db/ids.js';
import { Errors } from '../errors.js';
import { splitPage, type Page } from '../http/cursor.js';
import { isoTimestamp } from '../http/timestamps.js';
import { deleteBlock, findBlocksWith, insertBlock, pageOfBlocks } from './blocks.store.js';
import { inTransaction } from '../db/transaction.js';

/** Who blocks whom between the caller and another account. */
export interface BlockRelation {
  /** The caller blocks the other account. */
  readonly byMe: boolean;
  /** The other account blocks the caller. */
  readonly byThem: boolean;
}

export const NO_BLOCK: BlockRelation = Object.freeze({ byMe: false, byThem: false });

export function isBlocked(relation: BlockRelation): boolean {
  return relation.byMe || relation.byThem;
}

/** The block relation of `userId` with each of `others` (one query). */
export async function blockRelations(
  db: Db,
  userId: string,
  others: readonly string[],
): Promise<Map<string, BlockRelation>> {
  const relations = new Map(others.map((other) => [other, NO_BLOCK]));
  for (const block of await findBlocksWith(db, userId, others)) {
    const byMe = block.blocker_id === userId;
    const other = byMe ? block.blocked_id : block.blocker_id;
    const known = relations.get(other) ?? NO_BLOCK;
    relations.set(other, byMe ? { ...known, byMe } : { ...known, byThem: true });
  }
  return relations;
}

export async function blockRelation(db: Db, userId: string, other: string): Promise<BlockRelation> {
  return (await blockRelations(db, userId, [other])).get(other) ?? NO_BLOCK;
}

/** The id of the account `ref` names, as stored; 404 when there is none. */
async function requireAccount(db: Db, ref: string): Promise<string> {
  const userId = canonicalRowId(ref);
  if (userId === undefined || (await findUserById(db, userId)) === undefined)
    throw Errors.notFound();
  return userId;
}

/**
 * Blocks `userId` for the caller, and (in the same transaction) lets the other groups undo what a
 * block forbids: the follows between the two go, both ways. Repeating it changes nothing.
 */
export async function blockUser(ctx: ServiceContext, caller: Caller, ref: string) {
  const userId = await requireAccount(ctx.db, ref);
  if (userId === caller.userId) throw Errors.cannotBlockSelf();
  try {
    await inTransaction(ctx.db, async (trx) => {
      await insertBlock(trx, caller.userId, userId, ctx.clock());
      for (const hook of ctx.blockHooks) await hook(trx, caller.userId, userId);
    });
  } catch (error) {
    // Either account was deleted since it was looked up.
    if (isForeignKeyViolation(error)) throw Errors.notFound();
    throw error;
  }
}

/** Lifts the caller's block of `userId`, if any; follows removed by the block stay removed. */
export async function unblockUser(ctx: ServiceContext, caller: Caller, ref: string) {
  const userId = await requireAccount(ctx.db, ref);
  await deleteBlock(ctx.db, caller.userId, userId);
}

/** The accounts the caller blocks, newest block first. */
export async function listBlocks(ctx: ServiceContext, caller: Caller, page: Page) {
  const rows = await pageOfBlocks(ctx.db, caller.userId, page.after, page.limit + 1);
  const { rows: shown, next } = splitPage(rows, page.limit, (row) => ({
    value: row.blockedAt,
    id: row.user.id,
  }));
  const blocks = shown.map((row) => ({
    user: row.user,
    blocked_at: isoTimestamp(row.blockedAt),
  }));
  return { blocks, next };
}
