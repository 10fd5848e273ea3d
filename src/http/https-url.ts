import { Type } from '@sinclair/typebox';
import { refuseField as invalid, requireWellFormed } from './field-values.js';

/**
 * An `https` URL a client gives us to show to others: an account's or an influencer's
 * `avatar_url`, a profile's links (API.md: at most 2048 characters). One rule for all of them:
 * the schema states the type and outer size, `parseHttpsUrl` the rest.
 */
const URL_MAX = 2048;

export const HttpsUrl = Type.String({
  maxLength: URL_MAX,
  description: `An https URL (\`https://\` followed by a host) of at most ${URL_MAX} characters, without user name, password, spaces or backslashes.`,
});

/**
 * `raw` if it is an absolute `https` URL (the scheme in any letter case) without a user name or
 * password (they would be shown to everyone who sees the profile), else `400 validation_failed`
 * naming `field`.
 */
export function parseHttpsUrl(raw: string, field: string): string {
  requireWellFormed(raw, field);
  if ([...raw].length > URL_MAX) invalid(field, `must be at most ${URL_MAX} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return invalid(field, 'must be an https URL');
  }
  // The URL is stored and shown as given, so it must mean the same to every reader, not only to a
  // browser's parser, which forgives spaces and control characters (it strips or encodes them),
  // a missing or an extra `/` (`https:evil.test`, `https:///evil.test`: no host to others) and
  // `\` for `/` (`https://good.test\@evil.test/`, whose host others read as evil.test): we do not.
  if (
    url.protocol !== 'https:' ||
    url.hostname === '' ||
    !/^https:\/\/[^/]/i.test(raw) ||
    /[\s\p{Cc}\\]/u.test(raw)
  )
    invalid(field, 'must be an https URL');
  if (url.username !== '' || url.password !== '')
    invalid(field, 'must not contain a user name or password');
  return raw;
}
