import { sql, type Expression, type Kysely, type QueryCreator } from 'kysely';
import { cardSource, userCardOf, type UserCard } from '../accounts/user-cards.js';
import { keysetAfter } from '../db/keyset.js';
import { reusableShapedQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';
import type { Keyset } from '../http/cursor.js';

type Executor = Kysely<Database>;

/**
 * "`blocker` blocks `blocked`" as a subquery for EXISTS, for a list that reads who blocks whom
 * row by row in its own statement (the chat's conversation listings).
 */
export function blockExists(
  db: QueryCreator<Database>,
  blocker: Expression<string | null>,
  blocked: Expression<string | null>,
) {
  return db
    .selectFrom('blocks')
    .select(sql<number>`1`.as('blocked'))
    .where((eb) =>
      eb.and([eb(eb.ref('blocker_id'), '=', blocker), eb(eb.ref('blocked_id'), '=', blocked)]),
    );
}

/** Records that `blockerId` blocks `blockedId`; answers whether the block is new. */
export async function insertBlock(
  db: Executor,
  blockerId: string,
  blockedId: string,
  now: number,
): Promise<boolean> {
  const result = await db
    .insertInto('blocks')
    .values({ blocker_id: blockerId, blocked_id: blockedId, created_at: now })
    .onConflict((conflict) => conflict.columns(['blocker_id', 'blocked_id']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function deleteBlock(db: Executor, blockerId: string, blockedId: string) {
  await db
    .deleteFrom('blocks')
    .where('blocker_id', '=', blockerId)
    .where('blocked_id', '=', blockedId)
    .execute();
}

const blocksWithQuery = (db: Executor, userId: string, others: readonly string[]) =>
  db
    .selectFrom('blocks')
    .select(['blocker_id', 'blocked_id'])
    .where((eb) =>
      eb.or([
        eb.and([eb('blocker_id', '=', userId), eb('blocked_id', 'in', others)]),
        eb.and([eb('blocked_id', '=', userId), eb('blocker_id', 'in', others)]),
      ]),
    );
/** Compiled once per length of `others` (a send asks with one; a page with up to 100). */
const selectBlocksWith = reusableShapedQuery(blocksWithQuery);
const KEPT_LENGTHS = 100;

/** The blocks between `userId` and any of `others`, in either direction. */
export async function findBlocksWith(
  db: Executor,
  userId: string,
  others: readonly string[],
): Promise<{ blocker_id: string; blocked_id: string }[]> {
  if (others.length === 0) return [];
  if (others.length > KEPT_LENGTHS) return blocksWithQuery(db, userId, others).execute();
  const parameters = [userId, ...others, userId, ...others];
  return selectBlocksWith(db, String(others.length), parameters, userId, others);
}

export interface BlockedUser {
  readonly user: UserCard;
  readonly blockedAt: number;
}

/** Up to `limit` accounts `blockerId` blocks, newest block first, after `after`. */
export async function pageOfBlocks(
  db: Executor,
  blockerId: string,
  after: Keyset | undefined,
  limit: number,
): Promise<BlockedUser[]> {
  const rows = await cardSource(db)
    .innerJoin('blocks as b', 'b.blocked_id', 'u.id')
    .select('b.created_at as blocked_at')
    .where('b.blocker_id', '=', blockerId)
    .$if(after !== undefined, (qb) =>
      qb.where(keysetAfter('b.created_at', 'b.blocked_id', 'desc', after as Keyset)),
    )
    .orderBy('b.created_at', 'desc')
    .orderBy('b.blocked_id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ user: userCardOf(row), blockedAt: row.blocked_at }));
}
