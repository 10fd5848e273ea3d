import { randomUUID } from 'node:crypto';
import type { ServiceContext } from '../context.js';
import { Errors } from '../errors.js';
import type { ChatSendStart } from '../limits/policies.js';
import { publishMessageEvent, publishReadEvent, writeInVersionOrder } from './events.js';
import { findMembership, type Membership } from './membership.js';
import { parseMessageText } from './message-text.js';
import { findMessageByClientKey, type MessageRow } from './messages.store.js';
import { SendRefusedMeanwhile, storeSentMessage, type UnnumberedMessage } from './send.store.js';
import { sendFactsOf, sendRefusal } from './send-rules.js';
import { chatMessageView, type ChatMessage } from './views.js';
import { isForeignKeyViolation } from '../db/dialect.js';
import { inTransaction, retryingConflicts } from '../db/transaction.js';

export interface SendInput {
  readonly client_message_id: string;
  readonly text: string;
}

export interface SendResult {
  readonly message: ChatMessage;
  /** The key was used before with the same conversation and text: nothing new was stored. */
  readonly replayed: boolean;
}

/**
 * Sends a message, exactly once per `client_message_id`. Checks run in API.md's order (the
 * membership already proved): the text, a replay, blocks and DM policy, the rate limits; then the
 * message is numbered and stored and the sender's side marked read, atomically, and the event goes
 * out after that commits. The database's unique index on (sender, key) is what makes a send
 * happen once: a duplicate, concurrent or years later, fails on it and answers as the replay it
 * is. So a send looks for a replay only when something would stop it (a refusal or the unique
 * index), never on the way of the usual first send: a replay still wins over every later check.
 */
export async function sendMessage(
  ctx: ServiceContext,
  membership: Membership,
  input: SendInput,
): Promise<SendResult> {
  const text = parseMessageText(input.text);
  const digest = ctx.textDigests.of(text);
  /** The replay of this key if there is one; else `refusal` stands. */
  const replayOr = async (refusal: unknown): Promise<SendResult> => {
    const replay = await findReplay(ctx, membership, input.client_message_id, text);
    if (replay === undefined) throw refusal;
    return replay;
  };
  const refusal = sendRefusal(await sendFactsOf(ctx, membership));
  if (refusal !== undefined) return replayOr(refusal);
  const { userId, conversation } = membership;
  const message: UnnumberedMessage = {
    id: randomUUID(),
    conversation_id: conversation.id,
    sender_id: userId,
    client_message_id: input.client_message_id,
    text_digest: digest,
    text,
    created_at: ctx.clock(),
    edited_at: null,
    deleted_at: null,
  };
  let begun: ChatSendStart;
  try {
    begun = await ctx.limits.beginChatSend(userId, input.client_message_id, conversation.id);
  } catch (error) {
    return replayOr(error); // over a limit, unless this is a replay (which is exempt)
  }
  let stored: MessageRow;
  try {
    stored = await writeInVersionOrder(
      ctx,
      conversation.id,
      // The first send of its key was counted as it began; a likely duplicate counts only once
      // the unique index has let it through.
      () =>
        begun.first
          ? // One statement on PostgreSQL, which a deadlock with an account deletion can roll back.
            retryingConflicts(() => storeSentMessage(ctx.db, message))
          : storeIfNew(ctx, message),
      (row) => publishSent(ctx, membership, row),
    );
  } catch (error) {
    await begun.release();
    // The sender's account was deleted while this send waited for it (see lockAccount).
    if (isForeignKeyViolation(error)) throw Errors.notFound();
    if (error instanceof SendRefusedMeanwhile) return replayOr(await refusalNow(ctx, membership));
    // A limit, or the unique index: the key was used before (or just now, by a concurrent
    // send), and this is its replay or a reuse of the key; the failed write took its seq and
    // version back.
    return replayOr(error);
  }
  return { message: chatMessageView(stored, userId), replayed: false };
}

/**
 * `message.created` to both members; and, as sending marks the sender's side read, the read to
 * the sender's other devices when it passed messages of the peer (their unread count drops to 0).
 * The read position read before the write can only be behind the one the write moved (reads never
 * move back): one message behind the new one means nothing was passed.
 */
function publishSent(ctx: ServiceContext, { userId, conversation }: Membership, row: MessageRow) {
  publishMessageEvent(ctx, 'message.created', conversation, row);
  if (conversation.last_read_seq >= row.seq - 1) return;
  publishReadEvent(ctx, userId, {
    conversation_id: conversation.id,
    last_read_seq: row.seq,
    unread_count: 0,
  });
}

/** Why the conversation refused the send (a block or a deletion committed since its checks). */
async function refusalNow(ctx: ServiceContext, { userId, conversation }: Membership) {
  const current = await findMembership(ctx.db, userId, conversation.id);
  return sendRefusal(await sendFactsOf(ctx, current)) ?? Errors.cannotMessage();
}

/**
 * Another send of this key started within the minute: most likely this is its duplicate, and it
 * must not spend a slot of the limits that the first one holds. The write comes first: the unique
 * index stops a duplicate there (waiting for the first to commit); only a send that gets past it
 * counts, before its transaction commits.
 */
async function storeIfNew(ctx: ServiceContext, message: UnnumberedMessage) {
  let takeBack: (() => Promise<void>) | undefined;
  return inTransaction(
    ctx.db,
    async (trx) => {
      const row = await storeSentMessage(trx, message);
      takeBack = await ctx.limits.takeChatSend(message.sender_id, message.conversation_id);
      return row;
    },
    // Counted, but the transaction did not commit: give the slot back (once per attempt).
    async () => {
      await takeBack?.();
      takeBack = undefined;
    },
  );
}

/**
 * The stored message if this sender already used the key with the same conversation and text;
 * `422 idempotency_key_reused` if with another; undefined if never.
 */
async function findReplay(
  ctx: ServiceContext,
  { userId, conversation }: Membership,
  clientMessageId: string,
  text: string,
): Promise<SendResult | undefined> {
  const stored = await findMessageByClientKey(ctx.db, userId, clientMessageId);
  if (stored === undefined) return undefined;
  if (
    stored.conversation_id !== conversation.id ||
    !ctx.textDigests.matches(stored.text_digest, text)
  )
    throw Errors.idempotencyKeyReused();
  return { message: chatMessageView(stored, userId), replayed: true };
}
