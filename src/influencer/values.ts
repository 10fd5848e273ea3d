import { Errors } from '../errors.js';
import { parseName, refuseField as invalid } from '../http/field-values.js';
import { parseHttpsUrl } from '../http/https-url.js';

/**
 * The value rules of an influencer profile (API.md) that a JSON schema cannot state: trimming,
 * NFC, counting code points, URL parsing. The schemas have already checked types and outer sizes.
 */

/** Paths under /api/influencers/ that a handle would shadow. */
const RESERVED_HANDLES = new Set(['me', 'following', 'categories']);

export const DISPLAY_NAME_MAX = 50;
export const LABEL_MAX = 30;

/** Lower-cased, then 3–30 of a–z, 0–9 and _; stored and compared lower-cased. */
export function parseHandle(raw: string): string {
  const handle = raw.toLowerCase();
  // As if taken (API.md), even `me`, which is also too short.
  if (RESERVED_HANDLES.has(handle)) throw Errors.handleTaken();
  if (!/^[a-z0-9_]{3,30}$/.test(handle)) invalid('handle', 'must be 3–30 of a–z, 0–9 and _');
  return handle;
}

export function parseDisplayName(raw: string): string {
  return parseName(raw, 'display_name', DISPLAY_NAME_MAX);
}

export function parseAvatarUrl(raw: string | null): string | null {
  return raw === null ? null : parseHttpsUrl(raw, 'avatar_url');
}

export interface Link {
  readonly label: string;
  readonly url: string;
}

/** Only `label` and `url` are kept from each link. */
export function parseLinks(raw: readonly Link[]): Link[] {
  return raw.map((link) => ({
    label: parseName(link.label, 'links', LABEL_MAX),
    url: parseHttpsUrl(link.url, 'links'),
  }));
}
