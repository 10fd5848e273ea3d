import { sql, type Kysely, type QueryCreator } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import { reusableShapedQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';
import { raiseReadSeq } from './conversations.store.js';
import { insertMessage, type MessageRow } from './messages.store.js';

type Executor = Kysely<Database>;

/** A message before the conversation has numbered it. */
export type UnnumberedMessage = Omit<MessageRow, 'seq' | 'version' | 'sender_id'> & {
  readonly sender_id: string;
};

/**
 * A send's writes, atomically (in the caller's transaction, if any): raise the conversation's
 * `last_seq` and `version` (its row lock, or SQLite's one writer, serialises the sends of one
 * conversation), store the message with them, and move the sender's read position to it. A
 * second use of the sender's `client_message_id` fails here, on the unique index.
 */
export async function storeSentMessage(
  db: Executor,
  message: UnnumberedMessage,
): Promise<MessageRow> {
  if (isPostgres(db)) return storeInOneStatement(db, message);
  if (!db.isTransaction) return db.transaction().execute((trx) => storeSentMessage(trx, message));
  const { conversation_id: conversationId, sender_id: senderId } = message;
  const [numbers] = await numberOne(db, '', numberingParameters(message), message);
  if (numbers === undefined) throw new Error(`no conversation ${conversationId} to number`);
  const row = { ...message, seq: numbers.last_seq, version: numbers.version };
  await insertMessage(db, row);
  await raiseReadSeq(db, conversationId, senderId, row.seq);
  return row;
}

/**
 * Raises the conversation's `last_seq` and `version` for one message: its number and version. The
 * influencer's first message accepts the conversation.
 */
function numberSend(db: QueryCreator<Database>, message: UnnumberedMessage) {
  const now = message.created_at;
  return db
    .updateTable('conversations')
    .set({
      last_seq: sql`last_seq + 1`,
      version: sql`version + 1`,
      last_message_at: now,
      activity_at: now,
      accepted_at: sql`case when accepted_at is null and influencer_id = ${message.sender_id} then cast(${now} as bigint) else accepted_at end`,
    })
    .where('id', '=', message.conversation_id)
    .returning(['last_seq', 'version']);
}

/** What `numberSend` binds, in order (its statement is compiled once: reusable-query.ts). */
const numberingParameters = (message: UnnumberedMessage) => {
  const now = message.created_at;
  return [now, now, message.sender_id, now, message.conversation_id];
};
const numberOne = reusableShapedQuery(numberSend);

/**
 * PostgreSQL: the same three writes as one statement, so the conversation's row lock is held for
 * one round trip less than two, and concurrent sends of one conversation queue for less time.
 */
async function storeInOneStatement(db: Executor, message: UnnumberedMessage): Promise<MessageRow> {
  const { id, conversation_id: conversationId, sender_id: senderId } = message;
  const parameters = [
    ...numberingParameters(message),
    ...[conversationId, senderId],
    ...[id, conversationId, senderId, message.client_message_id, message.text_digest],
    ...[message.text, message.created_at],
  ];
  const [row] = await storeOne(db, '', parameters, message);
  if (row === undefined) throw new Error(`no conversation ${conversationId} to number`);
  return row;
}

const storeOne = reusableShapedQuery((db: Executor, message: UnnumberedMessage) => {
  const senderId = message.sender_id;
  const now = message.created_at;
  return db
    .with('numbered', (cte) => numberSend(cte, message))
    .with('sender_read', (cte) =>
      cte
        .updateTable('conversation_members')
        .set((eb) => ({ last_read_seq: eb.selectFrom('numbered').select('last_seq') }))
        .where('conversation_id', '=', message.conversation_id)
        .where('user_id', '=', senderId),
    )
    .insertInto('chat_messages')
    .columns([
      'id',
      'conversation_id',
      'seq',
      'version',
      'sender_id',
      'client_message_id',
      'text_digest',
      'text',
      'created_at',
      'edited_at',
      'deleted_at',
    ])
    .expression((eb) =>
      eb
        .selectFrom('numbered')
        .select([
          eb.val(message.id).as('id'),
          eb.val(message.conversation_id).as('conversation_id'),
          'last_seq',
          'version',
          eb.val(senderId).as('sender_id'),
          eb.val(message.client_message_id).as('client_message_id'),
          eb.val(message.text_digest).as('text_digest'),
          eb.val(message.text).as('text'),
          sql<number>`${now}::bigint`.as('created_at'),
          sql<null>`null::bigint`.as('edited_at'),
          sql<null>`null::bigint`.as('deleted_at'),
        ]),
    )
    .returningAll();
});
