import { randomUUID } from 'node:crypto';
import type { Caller } from '../accounts/caller.js';
import type { ServiceContext } from '../context.js';
import { isForeignKeyViolation } from '../db/dialect.js';
import { canonicalRowId } from '../db/ids.js';
import { Errors } from '../errors.js';
import type { ConversationView } from './conversation-views.js';
import { getConversation } from './conversations.js';
import { findConversationByPair, insertConversation, pairKey } from './conversations.store.js';
import { findMembership } from './membership.js';
import { startRefusal } from './send-rules.js';
import { inTransaction } from '../db/transaction.js';

export interface Started {
  readonly conversation: ConversationView;
  /** False when the pair already had a conversation (whoever started it). */
  readonly created: boolean;
}

/**
 * The caller's conversation with an influencer: the existing one of the pair if there is one
 * (even if the profile was deleted since), else a new one, if blocks, the influencer's DM policy
 * and the caller's hourly budget allow, checked again inside the write's transaction. The pair's
 * unique key makes concurrent starts create one.
 */
export async function startConversation(
  ctx: ServiceContext,
  caller: Caller,
  influencerRef: string,
): Promise<Started> {
  const { userId } = caller;
  const influencerId = canonicalRowId(influencerRef);
  if (influencerId === userId) throw Errors.cannotMessageSelf();
  if (influencerId === undefined) throw Errors.notFound();
  const existing = await findConversationByPair(ctx.db, userId, influencerId);
  if (existing !== undefined) return viewOf(ctx, userId, existing.id, false);
  const refusal = await startRefusal(ctx.db, userId, influencerId);
  if (refusal !== undefined) throw refusal;

  const takeBack = await ctx.limits.takeConversationStart(userId);
  const id = randomUUID();
  const now = ctx.clock();
  try {
    await inTransaction(ctx.db, async (trx) => {
      await insertConversation(trx, {
        id,
        influencer_id: influencerId,
        starter_id: userId,
        pair_key: pairKey(userId, influencerId),
        accepted_at: null,
        last_seq: 0,
        version: 0,
        created_at: now,
        last_message_at: null,
        activity_at: now,
      });
      // A block, the profile's deletion or a policy change committed since the checks above
      // wins (one committed while this transaction runs is concurrent with it, as for sends).
      const refusedMeanwhile = await startRefusal(trx, userId, influencerId);
      if (refusedMeanwhile !== undefined) throw refusedMeanwhile;
    });
  } catch (error) {
    await takeBack();
    // Two starts of one pair at once: the unique pair key let one through.
    const raced = await findConversationByPair(ctx.db, userId, influencerId);
    if (raced !== undefined) return viewOf(ctx, userId, raced.id, false);
    if (isForeignKeyViolation(error)) throw Errors.notFound(); // the account went meanwhile
    throw error;
  }
  return viewOf(ctx, userId, id, true);
}

async function viewOf(ctx: ServiceContext, userId: string, id: string, created: boolean) {
  const membership = await findMembership(ctx.db, userId, id);
  return { conversation: await getConversation(ctx, membership), created };
}
