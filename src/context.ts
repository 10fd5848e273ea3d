import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { EventBus } from './events/bus.js';
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
  readonly hasher: PasswordHasher;
  readonly policy: PasswordPolicy;
  readonly codes: CodeHasher;
  readonly accessTokens: AccessTokens;
  readonly refreshTokens: RefreshTokens;
  readonly limits: Limits;
  readonly outbox: Outbox;
  /** Where groups publish events for users, after their transaction commits. */
  readonly events: EventBus;
}
