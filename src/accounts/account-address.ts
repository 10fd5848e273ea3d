import type { Db } from '../db/database.js';
import { couldBeStoredAddress, parseEmailAddress } from './public-user.js';
import { findUserByEmail } from './users.store.js';

/**
 * The address of a request about an account (a code to confirm it or to reset its password): one
 * today's rule accepts, or one an account was registered under when an earlier rule allowed it.
 * Login signs such an account in and the mail transport still delivers to it, so it must also be
 * able to confirm its address and to recover a forgotten password. Any other address that breaks
 * today's rule answers the rule's `validation_failed`; only an existing account's is looked up.
 */
export async function addressOfAccount(db: Db, raw: string): Promise<string> {
  try {
    return parseEmailAddress(raw);
  } catch (error) {
    if (!couldBeStoredAddress(raw)) throw error;
    const email = raw.trim();
    if ((await findUserByEmail(db, email)) === undefined) throw error;
    return email;
  }
}
