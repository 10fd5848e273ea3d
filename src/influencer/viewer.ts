import type { Caller } from '../accounts/caller.js';
import { blockRelations, isBlocked, NO_BLOCK } from '../blocks/service.js';
import type { ServiceContext } from '../context.js';
import { isoTimestamp } from '../http/timestamps.js';
import type { Category } from './categories.js';
import { dmPolicyAllows } from './dm-policy.js';
import { followedAmong } from './follows.store.js';
import type { Profile } from './profiles.store.js';
import type { Link } from './values.js';

/** The `influencer` object of API.md. */
export interface InfluencerView {
  id: string;
  handle: string;
  display_name: string;
  bio: string | null;
  avatar_url: string | null;
  categories: Category[];
  links: Link[];
  dm_policy: Profile['dm_policy'];
  followers_count: number;
  created_at: string;
  updated_at: string;
  is_following?: boolean;
  can_message?: boolean;
}

/** Who is looking at a set of profiles, and what they need to know about each. */
export interface Viewer {
  readonly userId: string;
  /** Of the profiles being shown, the ones the viewer follows. */
  readonly follows: ReadonlySet<string>;
  /** Of the profiles being shown, the ones with a block between them and the viewer. */
  readonly blocked: ReadonlySet<string>;
  /** Of the profiles being shown, those the viewer has a conversation with that DM policy no longer binds. */
  readonly pastPolicy: ReadonlySet<string>;
}

/** Of the profiles being shown, those the viewer follows, is blocked with, and talks to past policy. */
export type Relations = Pick<Viewer, 'follows' | 'blocked' | 'pastPolicy'>;

/**
 * The viewer of `profiles`, or undefined without a bearer token (then no per-caller fields).
 * `known`: the relations, when the page's own query said already (the directory); otherwise
 * they are looked up.
 */
export async function viewerOf(
  ctx: ServiceContext,
  caller: Caller | undefined,
  profiles: readonly Profile[],
  known?: Relations,
): Promise<Viewer | undefined> {
  if (caller === undefined) return undefined;
  if (known !== undefined) return { userId: caller.userId, ...known };
  const ids = profiles.map((p) => p.id).filter((id) => id !== caller.userId);
  const [follows, blocks, pastPolicy] = await Promise.all([
    followedAmong(ctx.db, caller.userId, ids),
    blockRelations(ctx.db, caller.userId, ids),
    ctx.conversationsPastPolicy(caller.userId, ids),
  ]);
  const blocked = new Set(ids.filter((id) => isBlocked(blocks.get(id) ?? NO_BLOCK)));
  return { userId: caller.userId, follows, blocked, pastPolicy };
}

/**
 * Whether a message from the viewer to this profile would pass right now: never to oneself, never
 * across a block; then a conversation past DM policy (accepted) lets it through, else the
 * profile's DM policy decides.
 */
function canMessage(viewer: Viewer, profile: Profile): boolean {
  if (viewer.userId === profile.id || viewer.blocked.has(profile.id)) return false;
  if (viewer.pastPolicy.has(profile.id)) return true;
  return dmPolicyAllows(profile.dm_policy, viewer.follows.has(profile.id));
}

export function influencerView(profile: Profile, viewer: Viewer | undefined): InfluencerView {
  const view: InfluencerView = {
    id: profile.id,
    handle: profile.handle,
    display_name: profile.display_name,
    bio: profile.bio,
    avatar_url: profile.avatar_url,
    categories: [...profile.categories],
    links: profile.links.map(({ label, url }) => ({ label, url })),
    dm_policy: profile.dm_policy,
    followers_count: profile.followers_count,
    created_at: isoTimestamp(profile.created_at),
    updated_at: isoTimestamp(profile.updated_at),
  };
  if (viewer === undefined) return view;
  view.is_following = viewer.follows.has(profile.id);
  view.can_message = canMessage(viewer, profile);
  return view;
}

/** The API objects of `profiles` as `caller` (if any) sees them. */
export async function influencerViews(
  ctx: ServiceContext,
  caller: Caller | undefined,
  profiles: readonly Profile[],
  known?: Relations,
): Promise<InfluencerView[]> {
  const viewer = await viewerOf(ctx, caller, profiles, known);
  return profiles.map((profile) => influencerView(profile, viewer));
}

export async function influencerViewOne(
  ctx: ServiceContext,
  caller: Caller | undefined,
  profile: Profile,
): Promise<InfluencerView> {
  return influencerView(profile, await viewerOf(ctx, caller, [profile]));
}
