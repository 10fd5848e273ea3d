import { normalizeEmail } from '../../src/accounts/public-user.js';
import type { UserRow } from '../../src/accounts/users.store.js';

/**
 * An account row written straight into the database by a seed (benchmarks, plan tests): its
 * address confirmed, no profile fields. `passwordHash` is a real hash where the seed logs in.
 */
export function seededAccountRow(
  id: string,
  email: string,
  passwordHash: string,
  now: number,
): UserRow {
  return {
    id,
    email,
    email_normalized: normalizeEmail(email),
    password_hash: passwordHash,
    email_confirmed_at: now,
    name: null,
    bio: null,
    avatar_url: null,
    created_at: now,
    updated_at: now,
    password_changed_at: null,
  };
}
