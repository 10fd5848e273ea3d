import { sql, type Expression, type Kysely, type SelectQueryBuilder } from 'kysely';
import { userCardOf, type UserCard } from '../accounts/user-cards.js';
import { blockExists } from '../blocks/blocks.store.js';
import type { BlockRelation } from '../blocks/service.js';
import { reusableShapedQuery } from '../db/reusable-query.js';
import type { Database, DmPolicy } from '../db/tables.js';
import { followExists } from '../influencer/follows.store.js';
import type { ConversationRow, MemberConversationRow } from './conversations.store.js';
import type { MessageRow } from './messages.store.js';
import { unreadCountOf } from './unread.store.js';

type Executor = Kysely<Database>;

/**
 * A conversation as a member lists it: the conversation and the member's read position, its last
 * message, the peer's card, the member's unread count and the blocks between the two, all read
 * by one statement (a list page took seven before: bench/README.md, Chat), with what DM policy
 * needs where it binds (send-rules.ts): the peer's policy and whether the member follows them.
 */
export interface ConversationListing {
  readonly conversation: MemberConversationRow;
  readonly lastMessage: MessageRow | undefined;
  /** Undefined once the peer's account is deleted. */
  readonly peer: UserCard | undefined;
  readonly unreadCount: number;
  readonly block: BlockRelation;
  /** The peer's DM policy while they hold an influencer profile, else null. */
  readonly peerDmPolicy: DmPolicy | null;
  readonly followsPeer: boolean;
}

/** A query of conversation rows (`selectAll` of conversations, or a page of them). */
// Kysely types a subquery by its tables and selection; any tables, this selection.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ConversationSource = SelectQueryBuilder<any, any, ConversationRow>;

/** The other member of conversation `c`, as seen by `userId`. */
const peerOf = (userId: string): Expression<string | null> =>
  sql`case when ${sql.ref('c.starter_id')} = ${userId} then ${sql.ref('c.influencer_id')} else ${sql.ref('c.starter_id')} end`;

/**
 * The listings of `userId` for the conversations `source` yields (those it is a member of),
 * newest activity first. Every part is an index lookup per conversation.
 */
export function listingQuery(db: Executor, userId: string, source: ConversationSource) {
  return db
    .selectFrom(source.as('c'))
    .innerJoin('conversation_members as m', (join) =>
      join.onRef('m.conversation_id', '=', 'c.id').on('m.user_id', '=', userId),
    )
    .leftJoin('chat_messages as lm', (join) =>
      join.onRef('lm.conversation_id', '=', 'c.id').onRef('lm.seq', '=', 'c.last_seq'),
    )
    .leftJoin('users as pu', (join) => join.on((eb) => eb(peerOf(userId), '=', eb.ref('pu.id'))))
    .leftJoin('influencer_profiles as pp', 'pp.id', 'pu.id')
    .selectAll('c')
    .select((eb) => [
      'm.user_id as member_id',
      'm.last_read_seq',
      'lm.id as lm_id',
      'lm.version as lm_version',
      'lm.sender_id as lm_sender_id',
      'lm.client_message_id as lm_client_message_id',
      'lm.text_digest as lm_text_digest',
      'lm.text as lm_text',
      'lm.created_at as lm_created_at',
      'lm.edited_at as lm_edited_at',
      'lm.deleted_at as lm_deleted_at',
      'pu.id as peer_id',
      'pu.name as peer_name',
      'pu.avatar_url as peer_avatar_url',
      'pp.handle as peer_handle',
      'pp.display_name as peer_display_name',
      'pp.avatar_url as peer_profile_avatar_url',
      'pp.dm_policy as peer_dm_policy',
      unreadCountOf(db).as('unread_count'),
      eb.exists(blockExists(db, eb.val(userId), eb.ref('pu.id'))).as('blocked_by_me'),
      eb.exists(blockExists(db, eb.ref('pu.id'), eb.val(userId))).as('blocked_by_them'),
      eb.exists(followExists(db, eb.val(userId), eb.ref('pu.id'))).as('follows_peer'),
    ])
    .orderBy('c.activity_at', 'desc')
    .orderBy('c.id', 'desc');
}

type ListingRow = Awaited<ReturnType<ReturnType<typeof listingQuery>['execute']>>[number];

/** A row of `listingQuery`, in the shapes the rest of the chat uses. */
function toListing(row: ListingRow): ConversationListing {
  const { member_id, last_read_seq, unread_count, blocked_by_me, blocked_by_them, ...rest } = row;
  const conversation: MemberConversationRow = {
    id: rest.id,
    influencer_id: rest.influencer_id,
    starter_id: rest.starter_id,
    pair_key: rest.pair_key,
    accepted_at: rest.accepted_at,
    last_seq: rest.last_seq,
    version: rest.version,
    created_at: rest.created_at,
    last_message_at: rest.last_message_at,
    activity_at: rest.activity_at,
    member_id,
    last_read_seq,
  };
  return {
    conversation,
    lastMessage: lastMessageOf(row),
    peer:
      row.peer_id === null
        ? undefined
        : userCardOf({
            id: row.peer_id,
            name: row.peer_name,
            avatar_url: row.peer_avatar_url,
            handle: row.peer_handle,
            display_name: row.peer_display_name,
            profile_avatar_url: row.peer_profile_avatar_url,
          }),
    unreadCount: Number(unread_count),
    // SQLite answers EXISTS with 0 or 1, PostgreSQL with false or true.
    block: { byMe: Boolean(blocked_by_me), byThem: Boolean(blocked_by_them) },
    peerDmPolicy: row.peer_dm_policy,
    followsPeer: Boolean(row.follows_peer),
  };
}

function lastMessageOf(row: ListingRow): MessageRow | undefined {
  if (row.lm_id === null) return undefined;
  return {
    id: row.lm_id,
    conversation_id: row.id,
    seq: row.last_seq,
    version: row.lm_version as number,
    sender_id: row.lm_sender_id,
    client_message_id: row.lm_client_message_id as string,
    text_digest: row.lm_text_digest as string,
    text: row.lm_text,
    created_at: row.lm_created_at as number,
    edited_at: row.lm_edited_at,
    deleted_at: row.lm_deleted_at,
  };
}

const listings = reusableShapedQuery(
  (db: Executor, userId: string, source: (db: Executor) => ConversationSource) =>
    listingQuery(db, userId, source(db)),
);

/**
 * Runs `listingQuery` for the conversations `source` yields, compiled once per `shape` (a kind
 * of source): `sourceParameters` are the values `source` binds, in order.
 */
export async function runListing(
  db: Executor,
  userId: string,
  shape: string,
  source: (db: Executor) => ConversationSource,
  sourceParameters: readonly unknown[],
): Promise<ConversationListing[]> {
  // The statement binds the member's id three times in its select list (the blocks, the follow),
  // then the source's values, then twice in its joins (the member row, the peer).
  const parameters = [userId, userId, userId, ...sourceParameters, userId, userId];
  return (await listings(db, shape, parameters, userId, source)).map(toListing);
}

/** The listing of one conversation of `userId` (undefined if not a member). */
export async function findListing(
  db: Executor,
  userId: string,
  conversationId: string,
): Promise<ConversationListing | undefined> {
  const one = (db: Executor) =>
    db.selectFrom('conversations').selectAll().where('id', '=', conversationId);
  return (await runListing(db, userId, 'one', one, [conversationId]))[0];
}
