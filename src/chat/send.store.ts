import { sql, type Kysely, type QueryCreator } from 'kysely';
import { isPostgres } from '../db/dialect.js';
import { reusableShapedQuery } from '../db/reusable-query.js';
import type { Database } from '../db/tables.js';
import { raiseReadSeq } from './conversations.store.js';
import { insertMessage, type MessageRow } from './messages.store.js';
import { blockExists } from '../blocks/blocks.store.js';

type Executor = Kysely<Database>;

/**
 * The conversation refused the write: a block, the deletion of a member's account, or a DM policy
 * that now refuses the sender, committed after the send's checks read the conversation
 * (numberSend). The send is refused as it now would be.
 */
export class SendRefusedMeanwhile extends Error {
  override name = 'SendRefusedMeanwhile';
  constructor(conversationId: string) {
    super(`conversation ${conversationId} refused a send meanwhile`);
  }
}

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
  if (numbers === undefined) throw new SendRefusedMeanwhile(conversationId);
  const row = {
    ...message,
    seq: numbers.last_seq,
    version: numbers.version,
    created_at: Number(numbers.last_message_at),
  };
  await insertMessage(db, row);
  await raiseReadSeq(db, conversationId, senderId, row.seq);
  return row;
}

/**
 * Raises the conversation's `last_seq` and `version` for one message: its number and version, and
 * its time, never before the conversation's latest activity (the clock was read before the row
 * lock was waited for: a later number must not get an earlier time, nor the list's order go
 * back). The influencer's first message accepts the conversation.
 *
 * Only while both members' accounts exist, no block stands between them and the DM policy lets
 * the sender through: the checks before the write read them earlier, and a block, a deletion or a
 * policy that committed since must win. On
 * PostgreSQL a deletion (which clears the member's id under this row's lock) is seen even when
 * this statement waited for it; a block committed while the statement runs is concurrent with it.
 * No row answers a refused send.
 */
function numberSend(db: QueryCreator<Database>, message: UnnumberedMessage) {
  const now = sql<number>`cast(${message.created_at} as bigint)`;
  const stamp = sql<number>`case when activity_at > ${now} then activity_at else ${now} end`;
  const influencer = sql.ref<string | null>('conversations.influencer_id');
  const starter = sql.ref<string | null>('conversations.starter_id');
  return db
    .updateTable('conversations')
    .set({
      last_seq: sql`last_seq + 1`,
      version: sql`version + 1`,
      last_message_at: stamp,
      activity_at: stamp,
      accepted_at: sql`case when accepted_at is null and influencer_id = ${message.sender_id} then ${now} else accepted_at end`,
    })
    .where('id', '=', message.conversation_id)
    .where((eb) =>
      eb.and([
        eb('influencer_id', 'is not', null),
        eb('starter_id', 'is not', null),
        eb.not(eb.exists(blockExists(db, influencer, starter))),
        eb.not(eb.exists(blockExists(db, starter, influencer))),
        eb.not(policyRefuses(message.sender_id)),
      ]),
    )
    .returning(['last_seq', 'version', 'last_message_at']);
}

/**
 * The influencer's DM policy refuses `senderId` in this conversation: it binds the starter until
 * the influencer's first message, while the profile exists (send-rules.ts says the same in code;
 * here it is checked again at the write, so that a policy tightened or a follow removed since the
 * send's checks wins, as in a start).
 */
function policyRefuses(senderId: string) {
  return sql<boolean>`(conversations.accepted_at is null and conversations.starter_id = ${senderId} and exists (
    select 1 from influencer_profiles as p where p.id = conversations.influencer_id
      and (p.dm_policy = 'nobody' or (p.dm_policy = 'followers' and not exists (
        select 1 from follows as f
        where f.follower_id = ${senderId} and f.influencer_id = conversations.influencer_id)))))`;
}

/** What `numberSend` binds, in order (its statement is compiled once: reusable-query.ts). */
const numberingParameters = (message: UnnumberedMessage) => {
  const now = message.created_at;
  const sender = message.sender_id;
  return [now, now, now, now, sender, now, message.conversation_id, sender, sender];
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
    message.text,
  ];
  const [row] = await storeOne(db, '', parameters, message);
  if (row === undefined) throw new SendRefusedMeanwhile(conversationId);
  return row;
}

const storeOne = reusableShapedQuery((db: Executor, message: UnnumberedMessage) => {
  const senderId = message.sender_id;
  return db
    .with('numbered', (cte) => numberSend(cte, message))
    .with('sender_read', (cte) =>
      cte
        .updateTable('conversation_members')
        .set((eb) => ({ last_read_seq: eb.selectFrom('numbered').select('last_seq') }))
        .where('conversation_id', '=', message.conversation_id)
        .where('user_id', '=', senderId)
        // A refused send numbers nothing, and moves nothing.
        .where((eb) => eb.exists(eb.selectFrom('numbered').select('last_seq'))),
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
          sql<number>`last_message_at`.as('created_at'),
          sql<null>`null::bigint`.as('edited_at'),
          sql<null>`null::bigint`.as('deleted_at'),
        ]),
    )
    .returningAll();
});
