/** Times are milliseconds since the Unix epoch (BIGINT), the same on SQLite and PostgreSQL. */
export interface Database {
  users: UsersTable;
  sessions: SessionsTable;
  one_time_codes: OneTimeCodesTable;
  mail_outbox: MailOutboxTable;
  signing_keys: SigningKeysTable;
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
}

export interface SigningKeysTable {
  kid: string;
  algorithm: string;
  public_jwk: string;
  /** The private JWK, sealed with a key outside the database. */
  sealed_private_jwk: string;
  created_at: number;
}
