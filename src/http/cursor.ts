import { createHmac, timingSafeEqual } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { Errors } from '../errors.js';
import { matching, nullable } from './schemas.js';

/**
 * Keyset cursors for every paged list: `<payload>.<mac>`, the payload being the last row's sort
 * value and id, the MAC an HMAC-SHA-256 (keyed from APP_SECRET) over the payload and the list's
 * binding (which list, with which filters and sort). A cursor that was altered, forged, or comes
 * from another query answers `400 invalid_cursor`; nothing in it is secret, only tamper-evident.
 */

/** Where the next page starts: after the row with this sort value and id. */
export interface Keyset {
  readonly value: number | string;
  readonly id: string;
}

export interface Page {
  readonly limit: number;
  readonly after: Keyset | undefined;
}

export interface CursorCodec {
  encode(binding: Binding, keyset: Keyset): string;
  /** A page's `next_cursor`: null on the last page. */
  next(binding: Binding, keyset: Keyset | undefined): string | null;
  /** The page a request asks for: its limit, and where its cursor (if any) says to start. */
  page(query: PageQuery, binding: Binding, limits?: PageLimits): Page;
}

/** What a cursor is valid for: the list's name and every parameter that shapes its order. */
export type Binding = readonly [list: string, ...parameters: (string | undefined)[]];

export interface PageLimits {
  readonly default: number;
  readonly max: number;
}

const DEFAULT_LIMITS: PageLimits = { default: 20, max: 100 };
const MAC_BYTES = 16;
/** Far longer than any cursor of ours; a longer one is refused before any work. */
const CURSOR_MAX_LENGTH = 8192;

/** The `limit` and `cursor` query parameters, shared by every paged list. */
export function pageQuery(limits: PageLimits = DEFAULT_LIMITS) {
  return {
    limit: Type.Optional(
      Type.String({
        // A decimal integer without sign or leading zero; the range is checked when parsed.
        ...matching('^[1-9][0-9]{0,3}$', 'must be a whole number, without sign or leading zeros'),
        description: `An integer from 1 to ${limits.max} (default ${limits.default}).`,
      }),
    ),
    cursor: Type.Optional(
      // No maxLength here: an overlong cursor is an altered one, answered `invalid_cursor`.
      Type.String({
        description: 'The `next_cursor` of the previous page, with the same other parameters.',
      }),
    ),
  };
}

/** A page's `next_cursor` in a response schema. */
export const NextCursor = nullable(Type.String({ description: '`null` on the last page.' }));

interface PageQuery {
  readonly limit?: string;
  readonly cursor?: string;
}

export function createCursorCodec(key: Buffer): CursorCodec {
  const mac = (binding: Binding, payload: string) =>
    createHmac('sha256', key)
      .update(JSON.stringify(binding))
      .update('\n')
      .update(payload)
      .digest()
      .subarray(0, MAC_BYTES);

  function decode(binding: Binding, cursor: string): Keyset {
    if (cursor.length > CURSOR_MAX_LENGTH) throw Errors.invalidCursor();
    const [payload, signature, extra] = cursor.split('.');
    if (payload === undefined || signature === undefined || extra !== undefined)
      throw Errors.invalidCursor();
    // Compared as text: base64 decoding ignores a last character's spare bits, so bytes could
    // match for an altered cursor.
    const given = Buffer.from(signature);
    const expected = Buffer.from(mac(binding, payload).toString('base64url'));
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw Errors.invalidCursor();
    return parseKeyset(Buffer.from(payload, 'base64url').toString('utf8'));
  }

  function encode(binding: Binding, keyset: Keyset): string {
    const payload = Buffer.from(JSON.stringify([keyset.value, keyset.id])).toString('base64url');
    return `${payload}.${mac(binding, payload).toString('base64url')}`;
  }

  return {
    encode,
    next: (binding, keyset) => (keyset === undefined ? null : encode(binding, keyset)),
    page(query, binding, limits = DEFAULT_LIMITS) {
      return {
        limit: parseLimit(query.limit, limits),
        after: query.cursor === undefined ? undefined : decode(binding, query.cursor),
      };
    },
  };
}

function parseLimit(raw: string | undefined, limits: PageLimits): number {
  if (raw === undefined) return limits.default;
  const limit = Number(raw);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > limits.max) {
    throw Errors.validationFailed([
      { field: 'limit', message: `must be an integer from 1 to ${limits.max}` },
    ]);
  }
  return limit;
}

/** Only ever our own JSON (the MAC matched); checked anyway, so a format change fails cleanly. */
function parseKeyset(json: string): Keyset {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw Errors.invalidCursor();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw Errors.invalidCursor();
  const [value, id] = parsed as unknown[];
  const validValue =
    (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'string';
  if (!validValue || typeof id !== 'string') throw Errors.invalidCursor();
  return { value: value as number | string, id };
}

/**
 * A page from rows fetched with `limit + 1`: the extra row only says that more follow, and the
 * last row shown is where the next page starts.
 */
export function splitPage<T>(
  rows: readonly T[],
  limit: number,
  keysetOf: (row: T) => Keyset,
): { readonly rows: T[]; readonly next: Keyset | undefined } {
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  const more = rows.length > limit && last !== undefined;
  return { rows: shown, next: more ? keysetOf(last) : undefined };
}
