import { blockRelation, isBlocked, type BlockRelation } from '../blocks/service.js';
import type { ServiceContext } from '../context.js';
import type { Db } from '../db/database.js';
import type { DmPolicy } from '../db/tables.js';
import { Errors, type ApiError } from '../errors.js';
import { dmPolicyAllows, dmPolicyRefusal } from '../influencer/dm-policy.js';
import { followedAmong } from '../influencer/follows.store.js';
import { dmPoliciesOf } from '../influencer/profiles.store.js';
import type { MemberConversationRow } from './conversations.store.js';
import { peerOf, type Membership } from './membership.js';

/** What decides whether a member may send in a conversation right now. */
export interface SendFacts {
  /** Null once the peer's account is deleted. */
  readonly peerId: string | null;
  readonly block: BlockRelation;
  /**
   * The influencer's DM policy while it binds this member (the starter, until the influencer's
   * first message; not once the profile is deleted), else null.
   */
  readonly policy: DmPolicy | null;
  /** Whether the member follows the influencer (what the `followers` policy asks). */
  readonly follows: boolean;
}

/** Blocks stop both sides: the blocker hears `user_blocked`, the blocked `cannot_message`. */
export function blockRefusal(block: BlockRelation): ApiError | undefined {
  if (block.byMe) return Errors.userBlocked();
  if (block.byThem) return Errors.cannotMessage();
  return undefined;
}

/** Why a send would be refused (a deleted peer, blocks, then DM policy), or undefined. */
export function sendRefusal(facts: SendFacts): ApiError | undefined {
  if (facts.peerId === null) return Errors.cannotMessage();
  const blocked = blockRefusal(facts.block);
  if (blocked !== undefined) return blocked;
  return facts.policy === null ? undefined : dmPolicyRefusal(facts.policy, facts.follows);
}

/**
 * Why `userId` may not start a conversation with `influencerId` now: no influencer profile (404),
 * blocks, then DM policy; undefined if they may. Asked before the start's write, and again inside
 * its transaction, so that a block or the profile's deletion committed meanwhile wins.
 */
export async function startRefusal(
  db: Db,
  userId: string,
  influencerId: string,
): Promise<ApiError | undefined> {
  const policy = (await dmPoliciesOf(db, [influencerId])).get(influencerId);
  if (policy === undefined) return Errors.notFound();
  return sendRefusal({
    peerId: influencerId,
    block: await blockRelation(db, userId, influencerId),
    policy,
    follows: (await followedAmong(db, userId, [influencerId])).has(influencerId),
  });
}

/**
 * `sendRefusal(facts) === undefined` as a yes or no, for `can_send` on every conversation of a list
 * page: no error is built (an error captures a stack trace: ~2 % of a list page's CPU, measured).
 */
export function maySend(facts: SendFacts): boolean {
  const { peerId, block, policy } = facts;
  if (peerId === null || isBlocked(block)) return false;
  return policy === null || dmPolicyAllows(policy, facts.follows);
}

const policyBinds = (row: MemberConversationRow) =>
  row.accepted_at === null && row.starter_id === row.member_id && row.influencer_id !== null;

/** What DM policy says in each conversation where it binds the member: few, requests pending. */
export interface PolicyFacts {
  readonly policy: DmPolicy | null;
  readonly follows: boolean;
}

const UNBOUND: PolicyFacts = Object.freeze({ policy: null, follows: false });

/** The policy facts of a conversation listed with its peer's policy and the member's follow. */
export function listedPolicyFacts(
  row: MemberConversationRow,
  peerDmPolicy: DmPolicy | null,
  followsPeer: boolean,
): PolicyFacts {
  // Where the policy binds, the member is the starter, so the peer is the influencer.
  return policyBinds(row) ? { policy: peerDmPolicy, follows: followsPeer } : UNBOUND;
}

/**
 * The send facts of one conversation: its membership carries the blocks; the influencer's policy
 * and the member's follow are looked up (two queries) only where the policy binds.
 */
export async function sendFactsOf(ctx: ServiceContext, membership: Membership): Promise<SendFacts> {
  const { userId, conversation, block } = membership;
  const peerId = peerOf(conversation);
  if (!policyBinds(conversation)) return { peerId, block, ...UNBOUND };
  const influencerId = conversation.influencer_id as string;
  const [policies, followed] = await Promise.all([
    dmPoliciesOf(ctx.db, [influencerId]),
    followedAmong(ctx.db, userId, [influencerId]),
  ]);
  const policy = policies.get(influencerId) ?? null;
  return { peerId, block, policy, follows: followed.has(influencerId) };
}
