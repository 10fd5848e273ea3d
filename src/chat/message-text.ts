import { createHash, createHmac } from 'node:crypto';
import { refuseField, requireWellFormed, VISIBLE, withoutInvisible } from '../http/field-values.js';

const TEXT_MAX_CODE_POINTS = 2000;

// A control character (C0, DEL, C1) other than \n and \t.
const FORBIDDEN_CONTROL = /[^\P{Cc}\n\t]/u;

const PRIVATE_USE = /\p{Co}/u;

const invalid = (message: string): never => refuseField('text', message);

/**
 * A message text as API.md's Values give it: NFC, 1–2000 code points, at least one character that
 * is not white space (and shows: an addition), no control characters but line feed and tab.
 * Answers the NFC form.
 */
export function parseMessageText(raw: string): string {
  requireWellFormed(raw, 'text');
  const text = raw.normalize('NFC');
  if ([...text].length > TEXT_MAX_CODE_POINTS)
    invalid(`must be at most ${TEXT_MAX_CODE_POINTS} characters`);
  // Not only white space, nor only zero-width or other invisible characters (Hangul fillers, the
  // Braille blank): a message that shows nothing. Private-use characters count as visible: some
  // apps draw their own emoji with them.
  const shown = withoutInvisible(text);
  if (!VISIBLE.test(shown) && !PRIVATE_USE.test(shown)) invalid('must contain a visible character');
  if (FORBIDDEN_CONTROL.test(text)) invalid('must not contain control characters but \\n and \\t');
  return text;
}

/**
 * What a replay is compared with: the digest of the text first sent with a key, which the message
 * keeps through edits and deletion.
 */
export interface TextDigests {
  /**
   * HMAC-SHA-256 under a key derived from APP_SECRET, so that the digest a deleted or edited
   * message keeps cannot be checked against guesses ("yes", a phone number) by whoever reads the
   * database or a backup, as an unkeyed hash could.
   */
  of(text: string): string;
  /** Whether `stored` is the digest of `text`: keyed, or unkeyed as messages stored before carry. */
  matches(stored: string, text: string): boolean;
}

export function createTextDigests(key: Buffer): TextDigests {
  const of = (text: string) => createHmac('sha256', key).update(text).digest('base64url');
  return {
    of,
    matches: (stored, text) => stored === of(text) || stored === legacyTextDigest(text),
  };
}

/** The unkeyed digest that messages stored before `TextDigests` carry (their replays still match). */
export function legacyTextDigest(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}
