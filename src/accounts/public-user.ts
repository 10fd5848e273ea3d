import { Errors } from '../errors.js';
import { requireWellFormed } from '../http/field-values.js';
import { isoTimestamp } from '../http/timestamps.js';
import type { ProfileRow } from './users.store.js';

const EMAIL_MAX_LENGTH = 254;
/** An account's name, in code points after trimming and NFC (API.md: 1–100). */
export const NAME_MAX = 100;
/** What the unique index holds: every character lower-cases into at most two (migration 008). */
const NORMALIZED_EMAIL_MAX_LENGTH = 2 * EMAIL_MAX_LENGTH;

/**
 * The form under which an address is one account (and one set of per-address limits): trimmed,
 * composed (NFC) and lower-cased. An accent typed composed (U+00E9) or decomposed (e + U+0301)
 * looks the same and is the same address (RFC 6532 asks for NFC): two such spellings must not be
 * two accounts, nor the second fail to sign in to the first.
 */
export function normalizeEmail(email: string): string {
  return email.trim().normalize('NFC').toLowerCase();
}

/** The `user` object of every response: never a hash. */
export interface PublicUser {
  id: string;
  email: string;
  email_confirmed: boolean;
  name: string | null;
  bio: string | null;
  avatar_url: string | null;
  created_at: string;
  updated_at: string;
}

export function publicUser(row: ProfileRow): PublicUser {
  return {
    id: row.id,
    email: row.email,
    email_confirmed: row.email_confirmed_at !== null,
    name: row.name,
    bio: row.bio,
    avatar_url: row.avatar_url,
    created_at: isoTimestamp(row.created_at),
    updated_at: isoTimestamp(row.updated_at),
  };
}

/**
 * One @, a non-empty local part, a domain with a dot; no spaces or control characters anywhere,
 * nor the characters RFC 5322 allows only inside quotes or around addresses ("(),:;<>[\]). A mail
 * library reads those as a list or a display name: "owner<other@x.test>" would be stored as given
 * and mailed to other@x.test, "a,b@x.test" to two recipients.
 */
const EMAIL_PATTERN =
  /^[^@\s\p{Cc}"(),:;<>[\]\\]+@[^@\s\p{Cc}"(),:;<>[\]\\.]+(\.[^@\s\p{Cc}"(),:;<>[\]\\.]+)+$/u;

/**
 * Whether a character of `email` becomes ASCII under `normalizeEmail` without being ASCII: U+212A
 * KELVIN SIGN lower-cases (and composes) into "k", U+1FEF GREEK VARIA composes into "`", U+037E
 * GREEK QUESTION MARK into ";" (today the only three). Addresses are one account under that form,
 * so such an address would be another one's: registered first, it takes that address from its
 * owner, and mail for it goes to the look-alike as stored, not to the owner.
 */
function foldsIntoAscii(email: string): boolean {
  for (const char of email) {
    const folded = char.normalize('NFC').toLowerCase();
    if (char > '\x7f' && [...folded].every((c) => c <= '\x7f')) return true;
  }
  return false;
}

/** Trims and validates an e-mail address (API.md, Values), or answers validation_failed. */
export function parseEmailAddress(raw: string, field = 'email'): string {
  const email = raw.trim();
  requireWellFormed(email, field);
  if (email.length > EMAIL_MAX_LENGTH) {
    throw Errors.validationFailed([
      { field, message: `must be at most ${EMAIL_MAX_LENGTH} characters` },
    ]);
  }
  if (!EMAIL_PATTERN.test(email) || foldsIntoAscii(email))
    throw Errors.validationFailed([{ field, message: 'must be an e-mail address' }]);
  // Composing can lengthen text (U+FB2C becomes three code points): the index holds 508.
  if ([...normalizeEmail(email)].length > NORMALIZED_EMAIL_MAX_LENGTH) {
    throw Errors.validationFailed([
      { field, message: `must be at most ${EMAIL_MAX_LENGTH} characters` },
    ]);
  }
  return email;
}

/**
 * Whether `raw` could be a stored address, of any rule it was registered under: not longer than
 * any, no control character (PostgreSQL refuses a NUL in a query), well-formed (a lone surrogate
 * would be looked up as U+FFFD, another address). Anything else names no account.
 */
export function couldBeStoredAddress(raw: string): boolean {
  const email = raw.trim();
  return email.length <= EMAIL_MAX_LENGTH && !/\p{Cc}/u.test(email) && email.isWellFormed();
}

export function sameAddress(a: string, b: string): boolean {
  return normalizeEmail(a) === normalizeEmail(b);
}
