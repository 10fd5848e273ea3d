import type { Expression, SqlBool } from 'kysely';
import type { AccountDeletionHook } from './accounts/deletion.js';
import type { BlockHook } from './blocks/hooks.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { EventBus } from './events/bus.js';
import type { CursorCodec } from './http/cursor.js';
import type { TextDigests } from './chat/message-text.js';
import type { Limits } from './limits/policies.js';
import type { Outbox } from './mail/outbox.js';
import type { AccessTokens } from './security/access-tokens.js';
import type { CodeHasher } from './security/one-time-codes.js';
import type { PasswordHasher } from './security/password-hashing.js';
import type { PasswordPolicy } from './security/password-policy.js';
import type { RefreshTokens } from './security/refresh-tokens.js';

/** What the domain services need; built once in app.ts. No HTTP in here. */
export interface ServiceContext {
  readonly config: Config;
  readonly db: Db;
  /** Milliseconds since the epoch; tests substitute a controllable clock. */
  readonly clock: () => number;
  readonly passwordHasher: PasswordHasher;
  readonly passwordPolicy: PasswordPolicy;
  readonly codeHasher: CodeHasher;
  readonly accessTokens: AccessTokens;
  readonly refreshTokens: RefreshTokens;
  readonly limits: Limits;
  readonly outbox: Outbox;
  /** Where groups publish events for users, after their transaction commits. */
  readonly events: EventBus;
  /** Signs and reads the keyset cursors of every paged list. */
  readonly cursors: CursorCodec;
  /** Digests of chat message texts, which a replay of a send is compared with. */
  readonly textDigests: TextDigests;
  /** Each group's part of deleting an account, run in the deletion's transaction. */
  readonly accountDeletionHooks: readonly AccountDeletionHook[];
  /** Each group's part of one account blocking another, run in the block's transaction. */
  readonly blockHooks: readonly BlockHook[];
  /**
   * Of `peerIds`, those with whom `userId` has a conversation that DM policy no longer binds
   * (accepted, or one where `userId` is the influencer). The Chat group answers; the Influencer
   * group's `can_message` asks, without depending on Chat.
   */
  readonly conversationsPastPolicy: (
    userId: string,
    peerIds: readonly string[],
  ) => Promise<ReadonlySet<string>>;
  /** The same for one peer, as an SQL condition of a list's own query (Chat's, too). */
  readonly pastPolicyCondition: PastPolicyCondition;
}

/** Whether `userId` has a conversation with `peerId` past DM policy: SQL, on the asking query's expressions. */
export type PastPolicyCondition = (
  userId: Expression<string>,
  peerId: Expression<string>,
) => Expression<SqlBool>;
