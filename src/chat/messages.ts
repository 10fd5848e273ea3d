import type { ServiceContext } from '../context.js';
import { ApiError, Errors } from '../errors.js';
import { raiseVersion } from './conversations.store.js';
import { publishMessageEvent, writeInVersionOrder } from './events.js';
import { peerOf, type Membership, type MessageAccess } from './membership.js';
import { blockRelation } from '../blocks/service.js';
import { parseMessageText } from './message-text.js';
import {
  findMessage,
  messagesAfter,
  messagesBefore,
  messagesChangedSince,
  tombstoneMessage,
  updateMessageText,
  type MessageRow,
} from './messages.store.js';
import { blockRefusal, sendFactsOf } from './send-rules.js';
import { chatMessageView, type ChatMessage } from './views.js';
import { inTransaction } from '../db/transaction.js';
import type { Db } from '../db/database.js';

const EDIT_WINDOW_MS = 15 * 60_000;
/** Above every seq (an INTEGER column): the newest page. */
const NO_UPPER_BOUND = 2 ** 31 - 1;

export interface MessagePageQuery {
  readonly before?: number | undefined;
  readonly after?: number | undefined;
  readonly limit: number;
}

export interface MessagePage {
  readonly messages: ChatMessage[];
  /** More messages lie beyond the page, in the direction it was read (older, or with `after` newer). */
  readonly has_more: boolean;
  readonly last_seq: number;
}

/** A page of messages in ascending seq: below `before`, above `after`, or the newest. */
export async function listMessages(
  ctx: ServiceContext,
  { userId, conversation }: Membership,
  query: MessagePageQuery,
): Promise<MessagePage> {
  if (query.before !== undefined && query.after !== undefined)
    throw Errors.validationFailed([{ field: 'after', message: 'give before or after, not both' }]);
  const ascending = query.after !== undefined;
  const rows = ascending
    ? await messagesAfter(ctx.db, conversation.id, query.after ?? 0, query.limit + 1)
    : await messagesBefore(
        ctx.db,
        conversation.id,
        query.before ?? NO_UPPER_BOUND,
        query.limit + 1,
      );
  const page = rows.slice(0, query.limit);
  if (!ascending) page.reverse();
  return {
    messages: page.map((row) => chatMessageView(row, userId)),
    has_more: rows.length > query.limit,
    last_seq: Math.max(conversation.last_seq, page.at(-1)?.seq ?? 0),
  };
}

export interface ChangesPage {
  readonly messages: ChatMessage[];
  /** Every change up to this version is in this page or an earlier one. */
  readonly version: number;
  readonly has_more: boolean;
}

/** The current state of each message changed after `sinceVersion`, in ascending version. */
export async function listChanges(
  ctx: ServiceContext,
  { userId, conversation }: Membership,
  query: { sinceVersion: number; limit: number },
): Promise<ChangesPage> {
  // The conversation's version was read (with the membership) before these messages: changes
  // commit in version order, so the page covers at least up to it when nothing is left over.
  const rows = await messagesChangedSince(
    ctx.db,
    conversation.id,
    query.sinceVersion,
    query.limit + 1,
  );
  const page = rows.slice(0, query.limit);
  const hasMore = rows.length > query.limit;
  const lastVersion = page.at(-1)?.version ?? 0;
  return {
    messages: page.map((row) => chatMessageView(row, userId)),
    version: hasMore ? lastVersion : Math.max(conversation.version, lastVersion),
    has_more: hasMore,
  };
}

/** The author replaces the text within 15 minutes of sending, unless a block stands between. */
export async function editMessage(
  ctx: ServiceContext,
  access: MessageAccess,
  rawText: string,
): Promise<ChatMessage> {
  const text = parseMessageText(rawText);
  const { message, conversation, userId } = access;
  if (message.sender_id !== userId) throw Errors.notMessageAuthor();
  if (message.deleted_at !== null) throw Errors.messageDeleted();
  if (ctx.clock() - message.created_at > EDIT_WINDOW_MS) throw Errors.editWindowExpired();
  const blocked = blockRefusal((await sendFactsOf(ctx, access)).block);
  if (blocked !== undefined) throw blocked;

  const edited = await writeInVersionOrder(
    ctx,
    conversation.id,
    () =>
      inTransaction(ctx.db, async (trx) => {
        const version = await nextVersion(trx, conversation.id);
        // Again, holding the conversation's row (SQLite: the one write lock): a block committed
        // since the check above wins, and throwing rolls the version back.
        const peer = peerOf(conversation);
        const blockedNow = peer && blockRefusal(await blockRelation(trx, userId, peer));
        if (blockedNow) throw blockedNow;
        const row = await updateMessageText(trx, message.id, {
          text,
          version,
          now: ctx.clock(),
          textDigest: firstTextDigest(ctx, message),
        });
        // Deleted meanwhile: throwing rolls the version back.
        if (row === undefined) throw Errors.messageDeleted();
        return row;
      }),
    (row) => publishMessageEvent(ctx, 'message.updated', conversation, row),
  );
  return chatMessageView(edited, userId);
}

/** The author deletes a message (blocks do not stop this); repeating it answers the tombstone. */
export async function deleteMessage(
  ctx: ServiceContext,
  access: MessageAccess,
): Promise<ChatMessage> {
  const { message, conversation, userId } = access;
  if (message.sender_id !== userId) throw Errors.notMessageAuthor();
  if (message.deleted_at !== null) return chatMessageView(message, userId);

  let tombstone: MessageRow;
  try {
    tombstone = await writeInVersionOrder(
      ctx,
      conversation.id,
      () =>
        inTransaction(ctx.db, async (trx) => {
          const version = await nextVersion(trx, conversation.id);
          const row = await tombstoneMessage(trx, message.id, {
            version,
            now: ctx.clock(),
            textDigest: firstTextDigest(ctx, message),
          });
          if (row === undefined) throw Errors.messageDeleted(); // rolls the version back
          return row;
        }),
      (row) => publishMessageEvent(ctx, 'message.deleted', conversation, row),
    );
  } catch (error) {
    // A concurrent delete got there first: answer its tombstone, with no second event.
    if (!(error instanceof ApiError && error.code === 'message_deleted')) throw error;
    const current = await findMessage(ctx.db, message.id);
    if (current === undefined) throw Errors.notFound();
    return chatMessageView(current, userId);
  }
  return chatMessageView(tombstone, userId);
}

/**
 * The keyed digest of the message's first text, while its text is still that one (never edited):
 * it replaces an unkeyed digest the message may carry from before keyed ones (message-text.ts),
 * so that no unkeyed trace of a text outlives it. An edited message got a keyed one at its first
 * edit, or had its unkeyed one cleared by migration 014.
 */
function firstTextDigest(ctx: ServiceContext, message: MessageRow): string | undefined {
  if (message.edited_at !== null || message.text === null) return undefined;
  return ctx.textDigests.of(message.text);
}

/**
 * Raises the conversation's version for an edit or a delete. The conversation went after the
 * membership check (its last member's account was deleted): 404, as for any conversation one is
 * not in.
 */
async function nextVersion(trx: Db, conversationId: string): Promise<number> {
  const raised = await raiseVersion(trx, conversationId);
  if (raised === undefined) throw Errors.notFound();
  return raised.version;
}
