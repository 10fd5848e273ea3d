import { Errors } from '../errors.js';

/**
 * What every text field a client sends must be, whichever group reads it, and the one way to
 * refuse a field's value: `400 validation_failed` naming the field.
 */

export function refuseField(field: string, message: string): never {
  throw Errors.validationFailed([{ field, message }]);
}

/**
 * Refuses half of a surrogate pair on its own: JSON can carry it, UTF-8 cannot store it (it
 * would be stored and hashed as U+FFFD, another text than the one answered).
 */
export function requireWellFormed(raw: string, field: string): void {
  if (!raw.isWellFormed()) refuseField(field, 'must be valid Unicode text');
}

/**
 * Explicit bidirectional embeddings, overrides and isolates reorder the text after them, so that a
 * name reads as another ("Trojan Source"); a name never needs them. The marks LRM and RLM, which
 * mixed-direction names do use, are not among them.
 */
const BIDI_CONTROL = /[\u202A-\u202E\u2066-\u2069]/u;
/** A letter, digit, punctuation, symbol (emoji included), or a mark that takes room (ा, ⃝). */
export const VISIBLE = /[\p{L}\p{N}\p{P}\p{S}\p{Mc}\p{Me}]/u;
/**
 * Characters that are letters or symbols by category yet show nothing: the default-ignorable ones
 * (zero-width spaces and joiners, and the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, which are
 * letters) and U+2800 BRAILLE PATTERN BLANK (a symbol): the usual ways to a name that looks empty.
 */
const SHOWS_NOTHING = /[\p{Default_Ignorable_Code_Point}\u2800]/gu;

/** `text` without the characters that show nothing, for a test of what it shows. */
export const withoutInvisible = (text: string): string => text.replace(SHOWS_NOTHING, '');

/**
 * A name people see (an account's, an influencer's, a link's label) must show something and read
 * in the order it is written (additions to API.md: a name of zero-width spaces alone looked empty,
 * one with an override looked like another). Joiners inside emoji and scripts stay allowed.
 */
function requireReadableName(text: string, field: string): void {
  if (BIDI_CONTROL.test(text))
    refuseField(field, 'must not contain bidirectional override characters');
  if (!VISIBLE.test(withoutInvisible(text))) refuseField(field, 'must contain a visible character');
}

const CONTROL = /\p{Cc}/u;

/**
 * A name as people type it (an account's, an influencer's, a link's label): trimmed and in NFC,
 * so that " Ada" and "Ada", or a precomposed and a decomposed "é", are one name; then 1–`max`
 * code points without control characters, readable.
 */
export function parseName(raw: string, field: string, max: number): string {
  requireWellFormed(raw, field);
  const text = raw.trim().normalize('NFC');
  if (text.length === 0) refuseField(field, 'must not be empty');
  if ([...text].length > max) refuseField(field, `must be at most ${max} characters`);
  if (CONTROL.test(text)) refuseField(field, 'must not contain control characters');
  requireReadableName(text, field);
  return text;
}

/** A bio, an account's or an influencer's: at most this many code points (the schema checks). */
export const BIO_MAX = 500;

/** In a bio, line breaks and tabs are text; other control characters (C0, DEL, C1) are not. */
const CONTROL_BUT_LINES = /[^\P{Cc}\n\r\t]/u;

/** A bio as sent (not trimmed: its lines are the user's); `null` clears it. */
export function parseBio(raw: string | null, field = 'bio'): string | null {
  if (raw === null) return null;
  requireWellFormed(raw, field);
  if (CONTROL_BUT_LINES.test(raw))
    refuseField(field, 'must not contain control characters other than line breaks and tabs');
  return raw;
}
