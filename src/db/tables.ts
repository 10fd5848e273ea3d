/** Times are milliseconds since the Unix epoch (BIGINT), the same on SQLite and PostgreSQL. */
export interface Database {
  users: UsersTable;
  sessions: SessionsTable;
  one_time_codes: OneTimeCodesTable;
  mail_outbox: MailOutboxTable;
  code_try_decoys: CodeTryDecoysTable;
  signing_keys: SigningKeysTable;
  influencer_profiles: InfluencerProfilesTable;
  influencer_facets: InfluencerFacetsTable;
  follows: FollowsTable;
  conversations: ConversationsTable;
  conversation_members: ConversationMembersTable;
  chat_messages: ChatMessagesTable;
  blocks: BlocksTable;
  readiness_probe: ReadinessProbeTable;
}

export interface UsersTable {
  id: string;
  /** As the user typed it (trimmed). */
  email: string;
  /** Lower-cased: the unique key. */
  email_normalized: string;
  password_hash: string;
  email_confirmed_at: number | null;
  name: string | null;
  bio: string | null;
  avatar_url: string | null;
  created_at: number;
  updated_at: number;
  /** When the password was last changed or reset (not rehashed); null: not since migration 013. */
  password_changed_at: number | null;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  /** Random per-session seed of the refresh-token derivation (see security/refresh-tokens.ts). */
  refresh_seed: string;
  refresh_generation: number;
  /** JSON `[[generation, rotatedAt], …]`: the rotations of the last few seconds (refresh grace). */
  recent_rotations: string | null;
  user_agent: string | null;
  ip: string | null;
  created_at: number;
  last_used_at: number;
  expires_at: number;
}

export type CodePurpose = 'confirm_email' | 'reset_password';

export interface OneTimeCodesTable {
  user_id: string;
  purpose: CodePurpose;
  /** HMAC-SHA-256 under a key outside the database. */
  code_hash: string;
  /** Tries taken: every guess takes one before it is compared; none is left at 5. */
  failed_attempts: number;
  expires_at: number;
  created_at: number;
}

export interface MailOutboxTable {
  id: string;
  recipient: string;
  subject: string;
  /** The text body, sealed with a key outside the database: it may carry a one-time code. */
  sealed_body: string;
  attempts: number;
  next_attempt_at: number;
  locked_until: number | null;
  last_error: string | null;
  failed_at: number | null;
  created_at: number;
  /**
   * Set on a request for a code e-mail: the worker issues the code and composes the message when
   * it sends it (subject and body are empty until then), or drops it if no account may get one.
   */
  code_purpose: CodePurpose | null;
}

/** Rows a guess that finds no live code takes its "try" on, so that every guess writes one row. */
interface CodeTryDecoysTable {
  bucket: number;
  tries: number;
}

interface SigningKeysTable {
  kid: string;
  algorithm: string;
  public_jwk: string;
  /** The private JWK, sealed with a key outside the database. */
  sealed_private_jwk: string;
  created_at: number;
}

export type DmPolicy = 'everyone' | 'followers' | 'nobody';

/**
 * An account's public influencer profile; `id` is the account's user id. (On SQLite the table also
 * has `doc_id`, the row id of its FTS5 search table, which only the migration's triggers use.)
 */
export interface InfluencerProfilesTable {
  id: string;
  /** Lower-cased: the unique key. */
  handle: string;
  display_name: string;
  /** The display name folded for search and the name sort (influencer/search-text.ts). */
  search_name: string;
  bio: string | null;
  avatar_url: string | null;
  /** JSON array of category slugs, as given. */
  categories: string;
  /** JSON array of `{label, url}`. */
  links: string;
  dm_policy: DmPolicy;
  followers_count: number;
  created_at: number;
  updated_at: number;
}

/**
 * The directory's index rows: one per profile and facet (`*`, `c:<category>`, `p:<prefix>`), with
 * copies of the profile's sort keys, kept equal to the profile's in the same transaction.
 */
interface InfluencerFacetsTable {
  influencer_id: string;
  facet: string;
  followers_count: number;
  created_at: number;
  search_name: string;
  /** With `search_name`, the text a substring query filters on while walking a facet. */
  handle: string;
}

interface FollowsTable {
  follower_id: string;
  influencer_id: string;
  created_at: number;
}

/** One per pair of accounts; member ids become NULL when that account is deleted. */
export interface ConversationsTable {
  id: string;
  influencer_id: string | null;
  starter_id: string | null;
  /** The two member ids, sorted and joined by `:`: unique. */
  pair_key: string;
  /** When the influencer first sent a message; NULL until then (DM policy still applies). */
  accepted_at: number | null;
  /** The seq of the newest message; raised with `version` by every send. */
  last_seq: number;
  /** Raised by one for every create, edit and delete of one of its messages. */
  version: number;
  created_at: number;
  last_message_at: number | null;
  /** `last_message_at`, or `created_at` before the first message: the list's sort key. */
  activity_at: number;
}

interface ConversationMembersTable {
  conversation_id: string;
  user_id: string;
  /** Never moves back; unread counts are computed from it. */
  last_read_seq: number;
}

export interface ChatMessagesTable {
  id: string;
  conversation_id: string;
  seq: number;
  /** The conversation version of this message's latest change. */
  version: number;
  /** NULL once the sender's account is deleted. */
  sender_id: string | null;
  /** Unique per sender. */
  client_message_id: string;
  /** SHA-256 of the text first sent with the key, to tell a replay from a reused key. */
  text_digest: string;
  /** NULL once deleted. */
  text: string | null;
  created_at: number;
  edited_at: number | null;
  deleted_at: number | null;
}

interface BlocksTable {
  blocker_id: string;
  blocked_id: string;
  created_at: number;
}

/** The one row SQLite's readiness check writes (migration 017). */
interface ReadinessProbeTable {
  id: number;
  checked_at: number;
}
