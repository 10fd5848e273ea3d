import type { Db } from '../db/database.js';

/**
 * How one account shows another (a chat peer, a blocked user): `{id, name, avatar_url, handle}`.
 * The influencer profile's display name, avatar and handle when the account has one, else the
 * account's name and avatar and no handle. (A read of the profile's public face: no group code.)
 */
export interface UserCard {
  readonly id: string;
  readonly name: string | null;
  readonly avatar_url: string | null;
  readonly handle: string | null;
}

/** The card of one account row joined with its profile, if any (see `cardSource`). */
export interface CardRow {
  readonly id: string;
  readonly name: string | null;
  readonly avatar_url: string | null;
  readonly handle: string | null;
  readonly display_name: string | null;
  readonly profile_avatar_url: string | null;
}

export function userCardOf(row: CardRow): UserCard {
  if (row.handle === null)
    return { id: row.id, name: row.name, avatar_url: row.avatar_url, handle: null };
  return {
    id: row.id,
    name: row.display_name,
    avatar_url: row.profile_avatar_url,
    handle: row.handle,
  };
}

/** Accounts as `u`, joined with their influencer profiles as `p`: what a card needs. */
export function cardSource(db: Db) {
  return db
    .selectFrom('users as u')
    .leftJoin('influencer_profiles as p', 'p.id', 'u.id')
    .select([
      'u.id',
      'u.name',
      'u.avatar_url',
      'p.handle',
      'p.display_name',
      'p.avatar_url as profile_avatar_url',
    ]);
}
