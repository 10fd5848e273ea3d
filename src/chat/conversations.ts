import type { ServiceContext } from '../context.js';
import { conversationViews, type ConversationView } from './conversation-views.js';
import type { Membership } from './membership.js';
import { unreadTotals } from './unread.store.js';
import { pageOfConversations } from './conversations.store.js';
import { findListing } from './listings.store.js';
import { Errors } from '../errors.js';
import { splitPage, type Page } from '../http/cursor.js';

export async function getConversation(
  ctx: ServiceContext,
  { userId, conversation }: Membership,
): Promise<ConversationView> {
  const listing = await findListing(ctx.db, userId, conversation.id);
  // The membership was proved a moment ago; only a deletion since could take it away.
  if (listing === undefined) throw Errors.notFound();
  const [view] = conversationViews(userId, [listing]);
  if (view === undefined) throw new Error('a conversation view is missing');
  return view;
}

export interface UnreadSummary {
  readonly total_unread_count: number;
  readonly unread_conversations: number;
}

/** The sum of the caller's unread counts, and how many conversations have any. */
export async function unreadSummary(ctx: ServiceContext, userId: string): Promise<UnreadSummary> {
  const totals = await unreadTotals(ctx.db, userId);
  return { total_unread_count: totals.total, unread_conversations: totals.conversations };
}

/** A page of the caller's conversations, latest activity first (see `pageOfConversations`). */
export async function listConversations(
  ctx: ServiceContext,
  userId: string,
  query: { unreadOnly: boolean; page: Page },
) {
  const { page, unreadOnly } = query;
  const rows = await pageOfConversations(ctx.db, userId, {
    unreadOnly,
    after: page.after,
    limit: page.limit + 1,
  });
  const { rows: shown, next } = splitPage(rows, page.limit, ({ conversation }) => ({
    value: conversation.activity_at,
    id: conversation.id,
  }));
  return { conversations: conversationViews(userId, shown), next };
}
