import { sql, type Kysely } from 'kysely';
import { reusableQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';

type Executor = Kysely<Database>;

/**
 * A member's unread messages: the peer's, not deleted, above the member's read position. Counted
 * from `last_read_seq` on every read (a range scan of the seq index), never stored, so a count
 * cannot drift from the messages.
 */
function unreadMessages(db: Executor, userId: string) {
  return db
    .selectFrom('conversation_members as m')
    .innerJoin('chat_messages as msg', (join) =>
      join
        .onRef('msg.conversation_id', '=', 'm.conversation_id')
        .onRef('msg.seq', '>', 'm.last_read_seq'),
    )
    .where('m.user_id', '=', userId)
    .where('msg.deleted_at', 'is', null)
    .whereRef('msg.sender_id', '<>', 'm.user_id');
}

/**
 * The same count for the member row `m` of conversation `c` in an enclosing query (a listing), as
 * a scalar subquery: one range scan of the seq index above the member's read position.
 */
export function unreadCountOf(db: Executor) {
  return db
    .selectFrom('chat_messages as msg')
    .select((eb) => eb.fn.countAll<number>().as('unread'))
    .whereRef('msg.conversation_id', '=', sql.ref<string>('c.id'))
    .whereRef('msg.seq', '>', sql.ref<number>('m.last_read_seq'))
    .where('msg.deleted_at', 'is', null)
    .whereRef('msg.sender_id', '<>', sql.ref<string>('m.user_id'));
}

/** The ids of `userId`'s conversations with anything unread, as a subquery. */
export function conversationsWithUnread(db: Executor, userId: string) {
  return unreadMessages(db, userId).select('m.conversation_id');
}

/** Unread counts of `userId` in each of `conversationIds` (absent: none unread). */
export async function unreadCounts(
  db: Executor,
  userId: string,
  conversationIds: readonly string[],
): Promise<Map<string, number>> {
  if (conversationIds.length === 0) return new Map();
  const rows = await unreadMessages(db, userId)
    .where('m.conversation_id', 'in', conversationIds)
    .select((eb) => ['m.conversation_id', eb.fn.countAll().as('unread')])
    .groupBy('m.conversation_id')
    .execute();
  return new Map(rows.map((row) => [row.conversation_id, Number(row.unread)]));
}

/** Compiled once: every app asks for this after each `ready` (a reconnect storm asks it of all). */
const selectUnreadTotals = reusableQuery((db: Executor, userId: string) =>
  unreadMessages(db, userId).select((eb) => [
    eb.fn.countAll().as('total'),
    eb.fn.count('msg.conversation_id').distinct().as('conversations'),
  ]),
);

export async function unreadTotals(
  db: Executor,
  userId: string,
): Promise<{ total: number; conversations: number }> {
  const [row] = await selectUnreadTotals(db, userId);
  return { total: Number(row?.total ?? 0), conversations: Number(row?.conversations ?? 0) };
}
