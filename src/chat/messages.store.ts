import type { Kysely, Selectable } from 'kysely';
import { reusableQuery, reusableShapedQuery } from '../db/reusable-query.js';
import type { ChatMessagesTable, Database } from '../db/tables.js';

type Executor = Kysely<Database>;
export type MessageRow = Selectable<ChatMessagesTable>;

const insertRow = reusableQuery(
  (
    db: Executor,
    id: string,
    conversationId: string,
    seq: number,
    version: number,
    senderId: string | null,
    clientMessageId: string,
    textDigest: string,
    text: string | null,
    createdAt: number,
    editedAt: number | null,
    deletedAt: number | null,
  ) =>
    db.insertInto('chat_messages').values({
      id,
      conversation_id: conversationId,
      seq,
      version,
      sender_id: senderId,
      client_message_id: clientMessageId,
      text_digest: textDigest,
      text,
      created_at: createdAt,
      edited_at: editedAt,
      deleted_at: deletedAt,
    }),
);

/** Stores a message (every send: one compiled INSERT, whatever order the row's keys are in). */
export async function insertMessage(db: Executor, row: MessageRow): Promise<void> {
  await insertRow(
    db,
    row.id,
    row.conversation_id,
    row.seq,
    row.version,
    row.sender_id,
    row.client_message_id,
    row.text_digest,
    row.text,
    row.created_at,
    row.edited_at,
    row.deleted_at,
  );
}

export async function findMessage(db: Executor, id: string): Promise<MessageRow | undefined> {
  return db.selectFrom('chat_messages').selectAll().where('id', '=', id).executeTakeFirst();
}

const selectByClientKey = reusableQuery((db: Executor, senderId: string, clientMessageId: string) =>
  db
    .selectFrom('chat_messages')
    .selectAll()
    .where('sender_id', '=', senderId)
    .where('client_message_id', '=', clientMessageId),
);

/** The message a sender stored under a `client_message_id`, in any conversation. */
export async function findMessageByClientKey(
  db: Executor,
  senderId: string,
  clientMessageId: string,
): Promise<MessageRow | undefined> {
  return (await selectByClientKey(db, senderId, clientMessageId))[0];
}

const pagesBeyond = reusableShapedQuery(
  (
    db: Executor,
    conversationId: string,
    column: 'seq' | 'version',
    beyond: '<' | '>',
    bound: number,
    limit: number,
  ) =>
    db
      .selectFrom('chat_messages')
      .selectAll()
      .where('conversation_id', '=', conversationId)
      .where(column, beyond, bound)
      .orderBy(column, beyond === '<' ? 'desc' : 'asc')
      .limit(limit),
);

/**
 * Up to `limit` messages of a conversation whose `column` lies beyond `bound` (`<` below it,
 * `>` above it), nearest first: one range scan of the (conversation_id, column) index.
 */
function messagesBeyond(
  db: Executor,
  conversationId: string,
  column: 'seq' | 'version',
  beyond: '<' | '>',
  bound: number,
  limit: number,
): Promise<MessageRow[]> {
  const shape = `${column}${beyond}`;
  const parameters = [conversationId, bound, limit];
  return pagesBeyond(db, shape, parameters, conversationId, column, beyond, bound, limit);
}

/** Up to `limit` messages with seq below `before`, newest first. */
export const messagesBefore = (
  db: Executor,
  conversationId: string,
  before: number,
  limit: number,
) => messagesBeyond(db, conversationId, 'seq', '<', before, limit);

/** Up to `limit` messages with seq above `after`, oldest first. */
export const messagesAfter = (db: Executor, conversationId: string, after: number, limit: number) =>
  messagesBeyond(db, conversationId, 'seq', '>', after, limit);

/** Up to `limit` messages whose latest change came after `sinceVersion`, in version order. */
export const messagesChangedSince = (
  db: Executor,
  conversationId: string,
  sinceVersion: number,
  limit: number,
) => messagesBeyond(db, conversationId, 'version', '>', sinceVersion, limit);

/**
 * What an edit or a delete writes. `textDigest`: the keyed digest of the text first sent, for a
 * message that may still carry an unkeyed one (sent before keyed digests, never edited since);
 * once its text changes or goes, the unkeyed digest would be the only trace of it.
 */
interface MessageChange {
  readonly version: number;
  readonly now: number;
  readonly textDigest?: string;
}

/** Replaces the text of a message that is not deleted; undefined if it is (or is gone). */
export async function updateMessageText(
  db: Executor,
  id: string,
  change: MessageChange & { text: string },
): Promise<MessageRow | undefined> {
  return db
    .updateTable('chat_messages')
    .set({ text: change.text, version: change.version, edited_at: change.now })
    .$if(change.textDigest !== undefined, (update) =>
      update.set({ text_digest: change.textDigest }),
    )
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Turns a message into a tombstone unless it already is one; undefined then. */
export async function tombstoneMessage(
  db: Executor,
  id: string,
  change: MessageChange,
): Promise<MessageRow | undefined> {
  return db
    .updateTable('chat_messages')
    .set({ text: null, version: change.version, deleted_at: change.now })
    .$if(change.textDigest !== undefined, (update) =>
      update.set({ text_digest: change.textDigest }),
    )
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Every message an account sent, by conversation and seq (what its deletion tombstones). */
export async function messagesSentBy(
  db: Executor,
  senderId: string,
): Promise<{ id: string; conversation_id: string }[]> {
  return db
    .selectFrom('chat_messages')
    .select(['id', 'conversation_id'])
    .where('sender_id', '=', senderId)
    .orderBy('conversation_id')
    .orderBy('seq')
    .execute();
}

/**
 * The tombstone of a deleted account's message: no text, no sender, and no digest of the text
 * (an unkeyed SHA-256, which would let anyone holding the database guess short texts): it only
 * served replays by the sender, who is gone.
 */
export async function tombstoneForDeletedSender(
  db: Executor,
  id: string,
  change: { version: number; now: number },
): Promise<MessageRow> {
  return db
    .updateTable('chat_messages')
    .set((eb) => ({
      text: null,
      text_digest: '',
      sender_id: null,
      version: change.version,
      deleted_at: eb.fn.coalesce('deleted_at', eb.val(change.now)),
    }))
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}
