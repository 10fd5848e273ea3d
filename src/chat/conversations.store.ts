import {
  sql,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type Selectable,
  type SqlBool,
} from 'kysely';
import { keysetAfter } from '../db/keyset.js';
import type { BlockRelation } from '../blocks/service.js';
import { reusableQuery, reusableShapedQuery } from '../db/reusable-query.js';
import type { ConversationsTable, Database } from '../db/tables.js';
import type { Keyset } from '../http/cursor.js';
import { listingQuery, runListing, type ConversationListing } from './listings.store.js';
import { conversationsWithUnread } from './unread.store.js';

type Executor = Kysely<Database>;
export type ConversationRow = Selectable<ConversationsTable>;
type ConversationMembers = Pick<ConversationRow, 'version' | 'influencer_id' | 'starter_id'>;

/** A conversation as one of its members sees it. */
export interface MemberConversationRow extends ConversationRow {
  readonly member_id: string;
  readonly last_read_seq: number;
}

/** The unique key of a pair of accounts, in either order. */
export function pairKey(a: string, b: string): string {
  return a < b ? `${a}:${b}` : `${b}:${a}`;
}

/** Inserts the conversation and both member rows; run it inside a transaction. */
export async function insertConversation(db: Executor, row: ConversationRow): Promise<void> {
  await db.insertInto('conversations').values(row).execute();
  const members = [row.influencer_id, row.starter_id].filter((id): id is string => id !== null);
  await db
    .insertInto('conversation_members')
    .values(members.map((user_id) => ({ conversation_id: row.id, user_id, last_read_seq: 0 })))
    .execute();
}

export async function findConversationByPair(
  db: Executor,
  a: string,
  b: string,
): Promise<ConversationRow | undefined> {
  return db
    .selectFrom('conversations')
    .selectAll()
    .where('pair_key', '=', pairKey(a, b))
    .executeTakeFirst();
}

/** A conversation as one member sees it, and the blocks between its two members. */
export interface MemberConversation {
  readonly conversation: MemberConversationRow;
  readonly block: BlockRelation;
}

/**
 * Whether `userId` has blocked, or (`direction` 'by-them') is blocked by, either member of the
 * conversation `c`. A member never blocks themself, so this is a block between the two members.
 */
function blockWithMembers(
  eb: ExpressionBuilder<Database & { c: ConversationsTable }, 'c'>,
  userId: string,
  direction: 'by-me' | 'by-them',
) {
  const [mine, theirs] =
    direction === 'by-me'
      ? (['blocker_id', 'blocked_id'] as const)
      : (['blocked_id', 'blocker_id'] as const);
  return eb.exists(
    eb
      .selectFrom('blocks as b')
      .select(sql<number>`1`.as('blocked'))
      .where(`b.${mine}`, '=', userId)
      .where((inner) =>
        inner(`b.${theirs}`, 'in', [inner.ref('c.influencer_id'), inner.ref('c.starter_id')]),
      ),
  );
}

/**
 * One statement for the conversation, the member's row and the blocks both ways (subqueries of
 * the conversation's row): every send, edit and typing frame starts here, and needs no round trip
 * of its own for the blocks.
 */
const selectMemberConversation = reusableShapedQuery(
  (db: Executor, conversationId: string, userId: string) =>
    db
      .selectFrom('conversations as c')
      .selectAll('c')
      .select((eb) => [
        eb
          .selectFrom('conversation_members as m')
          .select('m.last_read_seq')
          .whereRef('m.conversation_id', '=', 'c.id')
          .where('m.user_id', '=', userId)
          .as('last_read_seq'),
        blockWithMembers(eb, userId, 'by-me').as('blocked_by_me'),
        blockWithMembers(eb, userId, 'by-them').as('blocked_by_them'),
      ])
      .where('c.id', '=', conversationId),
);

/**
 * The conversation if `userId` is one of its members (every conversation route asks), with the
 * blocks between the members as they stand.
 */
export async function findMemberConversation(
  db: Executor,
  conversationId: string,
  userId: string,
): Promise<MemberConversation | undefined> {
  const parameters = [userId, userId, userId, conversationId];
  const [row] = await selectMemberConversation(db, '', parameters, conversationId, userId);
  if (row === undefined || row.last_read_seq === null) return undefined;
  const { last_read_seq, blocked_by_me, blocked_by_them, ...conversation } = row;
  return {
    conversation: { ...conversation, member_id: userId, last_read_seq },
    // SQLite answers EXISTS with 0 or 1, PostgreSQL with false or true.
    block: { byMe: Boolean(blocked_by_me), byThem: Boolean(blocked_by_them) },
  };
}

/**
 * An edit or a delete (or `by` of them): raises the conversation's version, answering the new
 * one and the members, or undefined when the conversation is gone.
 */
export async function raiseVersion(
  db: Executor,
  conversationId: string,
  by = 1,
): Promise<ConversationMembers | undefined> {
  return db
    .updateTable('conversations')
    .set({ version: sql`version + ${by}` })
    .where('id', '=', conversationId)
    .returning(['version', 'influencer_id', 'starter_id'])
    .executeTakeFirst();
}

/**
 * Account deletion: takes `userId` out of every conversation it is in, in id order, each in ONE
 * update that also raises the version by the tombstones it gets (`tombstones`, by conversation).
 * Left to the user row's ON DELETE SET NULL, the member's id would be cleared in a second update
 * of a row this transaction already wrote, which makes PostgreSQL check the row's other foreign
 * key again: a share lock on the peer's account row, which the peer's own deletion holds while it
 * waits for this conversation row (a deadlock, three deletions at once ran out of retries).
 * Answers each conversation's new version and members.
 */
export async function leaveConversations(
  db: Executor,
  userId: string,
  tombstones: ReadonlyMap<string, number>,
): Promise<Map<string, ConversationMembers>> {
  const conversations = await db
    .selectFrom('conversations')
    .select('id')
    .where((eb) => eb.or([eb('influencer_id', '=', userId), eb('starter_id', '=', userId)]))
    .orderBy('id')
    .execute();
  const left = new Map<string, ConversationMembers>();
  for (const { id } of conversations) {
    const row = await db
      .updateTable('conversations')
      .set({
        version: sql`version + ${tombstones.get(id) ?? 0}`,
        influencer_id: sql`case when influencer_id = ${userId} then null else influencer_id end`,
        starter_id: sql`case when starter_id = ${userId} then null else starter_id end`,
        // The pair named the deleted account: its own id keeps the key unique and names no one.
        pair_key: sql`id`,
      })
      .where('id', '=', id)
      .returning(['version', 'influencer_id', 'starter_id'])
      .executeTakeFirstOrThrow();
    left.set(id, row);
  }
  return left;
}

/** Conversations no one is a member of any more, their messages with them (cascade). */
export async function deleteConversations(db: Executor, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('conversations').where('id', 'in', ids).execute();
}

const updateReadSeq = reusableQuery(
  (db: Executor, seq: number, conversationId: string, userId: string, below: number) =>
    db
      .updateTable('conversation_members')
      .set({ last_read_seq: seq })
      .where('conversation_id', '=', conversationId)
      .where('user_id', '=', userId)
      .where('last_read_seq', '<', below)
      .returning('last_read_seq'),
);

/** Moves the member's read position forward to `seq`, never back; answers whether it moved. */
export async function raiseReadSeq(
  db: Executor,
  conversationId: string,
  userId: string,
  seq: number,
): Promise<boolean> {
  return (await updateReadSeq(db, seq, conversationId, userId, seq)).length > 0;
}

/**
 * Of `peerIds`, those with whom `userId` has a conversation that DM policy no longer binds: one
 * the influencer has answered, or one where `userId` is the influencer.
 */
export async function peersPastPolicy(
  db: Executor,
  userId: string,
  peerIds: readonly string[],
): Promise<Set<string>> {
  if (peerIds.length === 0) return new Set();
  const parameters = [userId, ...peerIds, userId, ...peerIds];
  const rows = await pastPolicy(db, String(peerIds.length), parameters, userId, peerIds);
  return new Set(
    rows.map((row) => (row.starter_id === userId ? row.influencer_id : row.starter_id) as string),
  );
}

/**
 * `peersPastPolicy` for one peer, as a condition of the asking statement (`userId` and `peerId`
 * are its expressions), for a list that answers it row by row in its own query: the pair's
 * conversation is one probe of the `pair_key` unique index, whichever of them started it, asked
 * only when `userId` has such a conversation at all (a question both databases answer once per
 * query, as it does not depend on the row).
 */
export function pastPolicyCondition(
  userId: Expression<string>,
  peerId: Expression<string>,
): Expression<SqlBool> {
  const user = sql`cast(${userId} as text)`;
  const pair = (key: Expression<unknown>) => sql<SqlBool>`exists (select 1 from conversations pc
    where pc.pair_key = ${key}
    and ((pc.starter_id = ${user} and pc.influencer_id = ${peerId} and pc.accepted_at is not null)
      or (pc.influencer_id = ${user} and pc.starter_id = ${peerId})))`;
  // One key of the two is the pair's (pairKey orders them); two equalities, not `in (…)`, which
  // SQLite answered four times slower.
  return sql<SqlBool>`case when (
      exists (select 1 from conversations ga where ga.starter_id = ${user} and ga.accepted_at is not null)
      or exists (select 1 from conversations gb where gb.influencer_id = ${user})
    ) then (${pair(sql`${user} || ':' || ${peerId}`)} or ${pair(sql`${peerId} || ':' || ${user}`)})
    else false end`;
}

// Asked for every page of profiles: compiled once per number of peers (a page holds at most 100).
const pastPolicy = reusableShapedQuery((db: Executor, userId: string, peerIds: readonly string[]) =>
  db
    .selectFrom('conversations')
    .select(['influencer_id', 'starter_id'])
    .where((eb) =>
      eb.or([
        eb.and([
          eb('starter_id', '=', userId),
          eb('influencer_id', 'in', peerIds),
          eb('accepted_at', 'is not', null),
        ]),
        eb.and([eb('influencer_id', '=', userId), eb('starter_id', 'in', peerIds)]),
      ]),
    ),
);

/**
 * A page of `userId`'s conversations, latest activity first: those with messages, and those
 * without that `userId` started. With `unreadOnly`, those with a message `userId` has not read.
 */
export async function pageOfConversations(
  db: Executor,
  userId: string,
  query: ConversationPageQuery,
): Promise<ConversationListing[]> {
  const { unreadOnly, after, limit } = query;
  const shape = `page${unreadOnly ? ':unread' : ''}${after === undefined ? '' : ':after'}`;
  const side = (influencer: boolean) => [
    userId,
    ...(influencer ? [0] : []),
    ...(unreadOnly ? [userId] : []),
    ...(after === undefined ? [] : [after.value, after.id]),
    limit,
  ];
  const parameters = [...side(true), ...side(false), limit];
  const source = (db: Executor) => pageSource(db, userId, query);
  return runListing(db, userId, shape, source, parameters);
}

export interface ConversationPageQuery {
  readonly unreadOnly: boolean;
  readonly after: Keyset | undefined;
  readonly limit: number;
}

/**
 * The query of `pageOfConversations`, unrun (its plan is tested). A member is the influencer or
 * the starter of each of its conversations: each side reads at most `limit` conversations down
 * its activity index (migration 006), the two short lists are merged, and only the page is
 * joined with the rest of each listing, whatever the member's number of conversations. (Each
 * side carries its own limit, and the joins come last: a planner that joined first, or pushed
 * no limit into the arms of a UNION ALL, would join and sort every conversation.)
 */
export function conversationPageQuery(db: Executor, userId: string, query: ConversationPageQuery) {
  return listingQuery(db, userId, pageSource(db, userId, query));
}

/** The page's conversation rows, before the listing joins the rest (see above). */
function pageSource(db: Executor, userId: string, query: ConversationPageQuery) {
  const side = (column: 'influencer_id' | 'starter_id') =>
    db
      .selectFrom('conversations')
      .selectAll()
      .where(column, '=', userId)
      // A conversation without messages is listed to its starter only.
      .$if(column === 'influencer_id', (qb) => qb.where('last_seq', '>', 0))
      .$if(query.unreadOnly, (qb) => qb.where('id', 'in', conversationsWithUnread(db, userId)))
      .$if(query.after !== undefined, (qb) =>
        qb.where(keysetAfter('activity_at', 'id', 'desc', query.after as Keyset)),
      )
      .orderBy('activity_at', 'desc')
      .orderBy('id', 'desc')
      .limit(query.limit);
  return db
    .selectFrom(side('influencer_id').as('influencing'))
    .selectAll()
    .unionAll(db.selectFrom(side('starter_id').as('starting')).selectAll())
    .orderBy('activity_at', 'desc')
    .orderBy('id', 'desc')
    .limit(query.limit);
}
