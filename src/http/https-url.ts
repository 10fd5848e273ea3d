import { Type } from '@sinclair/typebox';
import { Errors } from '../errors.js';

/**
 * An `https` URL a client gives us to show to others: an account's or an influencer's
 * `avatar_url`, a profile's links (API.md: at most 2048 characters). One rule for all of them:
 * the schema states the type and outer size, `parseHttpsUrl` the rest.
 */
export const URL_MAX = 2048;

export const HttpsUrl = Type.String({
  maxLength: URL_MAX,
  description: `An https URL of at most ${URL_MAX} characters, without user name or password.`,
});

/** Half of a surrogate pair on its own: JSON can carry it, UTF-8 cannot store it. */
const LONE_SURROGATE = /\p{Cs}/u;

function invalid(field: string, message: string): never {
  throw Errors.validationFailed([{ field, message }]);
}

/**
 * `raw` if it is an absolute `https` URL (the scheme in any letter case) without a user name or
 * password (they would be shown to everyone who sees the profile), else `400 validation_failed`
 * naming `field`.
 */
export function parseHttpsUrl(raw: string, field: string): string {
  if (LONE_SURROGATE.test(raw)) invalid(field, 'must be valid Unicode text');
  if ([...raw].length > URL_MAX) invalid(field, `must be at most ${URL_MAX} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return invalid(field, 'must be an https URL');
  }
  // The parser forgives spaces and control characters (it strips or encodes them): we do not.
  if (url.protocol !== 'https:' || url.hostname === '' || /[\s\p{Cc}]/u.test(raw))
    invalid(field, 'must be an https URL');
  if (url.username !== '' || url.password !== '')
    invalid(field, 'must not contain a user name or password');
  return raw;
}
