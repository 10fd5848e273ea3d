import { isBlocked } from '../../blocks/service.js';
import type { ServiceContext } from '../../context.js';
import { canonicalRowId } from '../../db/ids.js';
import { ApiError } from '../../errors.js';
import type { TypingOutcome } from '../../operations/realtime-metrics.js';
import { findMembership, peerOf } from '../membership.js';
import { maySend, sendFactsOf } from '../send-rules.js';
import type { TypingEvent } from './frame-schemas.js';

/**
 * A member typing in a conversation, relayed to the peer's sockets on every instance as
 * `{type:"typing", conversation_id, user_id}`, never to the typist's own. Dropped without a word
 * (a socket frame has no answer to carry a refusal) beyond one per 3 s per user and conversation
 * or 20 in 10 s per user, for a non-member, and wherever a send would be refused (a deleted peer,
 * a block either way, DM policy while it binds). The limits are counted first, so extras cost no
 * query, whatever ids they name.
 */
export async function relayTyping(
  ctx: ServiceContext,
  userId: string,
  conversationRef: string,
): Promise<TypingOutcome> {
  // The id as stored, before the limit counts it: another letter case is the same conversation.
  const conversationId = canonicalRowId(conversationRef);
  if (conversationId === undefined) return 'refused';
  if (!(await ctx.limits.takeTyping(userId, conversationId))) return 'throttled';
  const membership = await findMembership(ctx.db, userId, conversationId).catch(notFound);
  if (membership === undefined) return 'refused';
  const peer = peerOf(membership.conversation);
  if (peer === null || isBlocked(membership.block)) return 'refused';
  // Typing follows the send rules: a fan that DM policy keeps from sending does not type at the
  // influencer either (two lookups, only while the policy binds: a request not yet answered).
  if (!maySend(await sendFactsOf(ctx, membership))) return 'refused';
  const event = { type: 'typing', conversation_id: conversationId, user_id: userId } as const;
  ctx.events.publish([peer], event satisfies TypingEvent);
  return 'relayed';
}

/** Not a member (the unknown-id 404): nothing to relay. Anything else is a real failure. */
function notFound(error: unknown): undefined {
  if (error instanceof ApiError && error.status === 404) return undefined;
  throw error;
}
