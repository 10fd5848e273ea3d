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
 * The same count for the member row `m` of conversation `conversationId` (by default `c.id`) in
 * an enclosing query, as a scalar subquery: one range scan of the seq index above the member's
 * read position.
 */
export function unreadCountOf(db: Executor, conversationId = sql.ref<string>('c.id')) {
  return db
    .selectFrom('chat_messages as msg')
    .select((eb) => eb.fn.countAll<number>().as('unread'))
    .whereRef('msg.conversation_id', '=', conversationId)
    .whereRef('msg.seq', '>', sql.ref<number>('m.last_read_seq'))
    .where('msg.deleted_at', 'is', null)
    .whereRef('msg.sender_id', '<>', sql.ref<string>('m.user_id'));
}

/** The ids of `userId`'s conversations with anything unread, as a subquery. */
export function conversationsWithUnread(db: Executor, userId: string) {
  return unreadMessages(db, userId).select('m.conversation_id');
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

/**
 * The member's read position and unread count, read together (one statement, one snapshot): read
 * apart, a concurrent read in between answered a pair no moment had (`last_read_seq` 5 with
 * nothing unread above it). Undefined once the membership is gone (its account deleted).
 */
export async function findReadState(
  db: Executor,
  conversationId: string,
  userId: string,
): Promise<{ last_read_seq: number; unread_count: number } | undefined> {
  const row = await db
    .selectFrom('conversation_members as m')
    .select(['m.last_read_seq', unreadCountOf(db, sql.ref('m.conversation_id')).as('unread_count')])
    .where('m.conversation_id', '=', conversationId)
    .where('m.user_id', '=', userId)
    .executeTakeFirst();
  if (row === undefined) return undefined;
  return { last_read_seq: row.last_read_seq, unread_count: Number(row.unread_count ?? 0) };
}
