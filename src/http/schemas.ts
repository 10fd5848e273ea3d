import { Kind, Type, type Static, type TSchema } from '@sinclair/typebox';
import { ERROR_CODES, type CatalogueEntry } from '../errors.js';
import { BIO_MAX } from './field-values.js';

/** The body of every 4xx/5xx answer. */
export const ErrorBody = Type.Object(
  {
    message: Type.String({ description: 'One human sentence.' }),
    error: Type.String({
      enum: [...ERROR_CODES], // generated from the catalogue (src/errors.ts)
      description: 'Stable snake_case code, e.g. `invalid_code`.',
    }),
    details: Type.Optional(
      Type.Array(Type.Object({ field: Type.String(), message: Type.String() }), {
        description: 'Present on `validation_failed` and `weak_password` only.',
      }),
    ),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

/**
 * `429` (`rate_limited`, or `too_many_attempts` for wrong passwords), with `Retry-After`: documented
 * on every route that counts its callers (docs.ts adds it where the anonymous budget applies).
 */
export const TooManyRequests = tooMany('Too many requests or attempts');

function tooMany(what: string) {
  return Type.Ref(ErrorBody, {
    description: `${what}: try again after \`Retry-After\` seconds.`,
    headers: {
      'Retry-After': Type.Integer({
        minimum: 1,
        description: 'Seconds to wait before trying again.',
      }),
    },
  });
}

/** `401`, with `WWW-Authenticate: Bearer` when the access token is missing, bad or ended. */
export const Unauthorized = Type.Ref(ErrorBody, {
  description: 'No valid access token (`unauthorized`, with `WWW-Authenticate: Bearer`).',
  headers: { 'WWW-Authenticate': Type.Literal('Bearer') },
});

/**
 * A value that may be null, as OpenAPI 3.1 says it: `type: [T, "null"]` when the schema has one
 * `type` and only keywords that leave a null alone (`format`, `pattern`, lengths, bounds apply to
 * their own type only); otherwise (a `$ref`, an `enum` or `const`, which null would fail) a union
 * with null. The type list where it can, because fast-json-stringify serializes an `anyOf` by
 * running ajv on the value to pick its branch: a page of 50 chat messages (three nullable fields
 * each) took 38 µs to serialize that way, 27 µs this way (and allocated accordingly). A union
 * with a `$ref` is written out for the serializer alone (serializer.ts).
 */
export function nullable<T extends TSchema>(schema: T) {
  if (typeof schema.type !== 'string' || 'enum' in schema || 'const' in schema)
    return Type.Union([schema, Type.Null()]);
  // Its own kind, not the schema's: TypeBox's checker must not take it for a plain string.
  return Type.Unsafe<Static<T> | null>({
    ...schema,
    [Kind]: 'Unsafe',
    type: [schema.type, 'null'],
  });
}

/** `{ "message": "<text>" }` and nothing else. */
export function MessageBody(text: string) {
  return Type.Object({ message: Type.Literal(text) }, { additionalProperties: false });
}

/**
 * Every route answers errors in one shape. The errors a route names (API.md's notable errors of
 * the route, as catalogue entries) are documented under their statuses with their codes, so the
 * document tells a client what to handle; any other 4xx or 5xx (a body failing its schema, the
 * database away) is the generic one, and docs.ts adds the 401 and 429 every route may answer.
 */
export function withErrors<T extends Record<number, TSchema>>(
  responses: T,
  ...errors: readonly CatalogueEntry[]
) {
  const codes = new Map<number, Set<string>>();
  for (const { status, code } of errors)
    codes.set(status, (codes.get(status) ?? new Set()).add(code));
  const named: Record<string, TSchema> = {};
  for (const [status, listed] of codes) {
    // Any /api route may also answer the per-IP budget's 429 (docs.ts).
    if (status === 429) listed.add('rate_limited');
    named[status] = status === 429 ? tooMany(codeList([...listed])) : errorsNamed([...listed]);
  }
  return {
    ...(named as Record<never, never>),
    ...responses,
    '4xx': Type.Ref(ErrorBody),
    '5xx': Type.Ref(ErrorBody),
  };
}

/** The codes each error response made by `errorsNamed` lists, for docs.ts to add to. */
const namedCodes = new WeakMap<object, readonly string[]>();

/** An error response whose description lists `codes`. */
export function errorsNamed(codes: readonly string[]) {
  const response = Type.Ref(ErrorBody, { description: codeList(codes) });
  namedCodes.set(response, codes);
  return response;
}

/** The codes an error response from `errorsNamed` lists; none for any other. */
export function codesNamedBy(response: unknown): readonly string[] {
  if (typeof response !== 'object' || response === null) return [];
  return namedCodes.get(response) ?? [];
}

const codeList = (codes: readonly string[]) => codes.map((code) => `\`${code}\``).join(', ');

/**
 * What each `pattern` asks for, in words: a value that fails one is told this, never the regular
 * expression (`must match pattern "^[^\p{Cc}]*$"` helps no one filling in a form).
 */
const PATTERN_RULES = new Map<string, string>();

/** A schema's `pattern`, with the sentence a value failing it is answered with. */
export function matching(pattern: string, rule: string): { pattern: string } {
  const known = PATTERN_RULES.get(pattern);
  if (known !== undefined && known !== rule)
    throw new Error(`pattern ${pattern} already means "${known}"`);
  PATTERN_RULES.set(pattern, rule);
  return { pattern };
}

/** The sentence `matching` gave `pattern`, if any. */
export const patternRule = (pattern: string): string | undefined => PATTERN_RULES.get(pattern);

/** A bio, an account's or an influencer's; its characters are checked by `parseBio`. */
export const Bio = Type.String({
  maxLength: BIO_MAX,
  description: `At most ${BIO_MAX} characters; line breaks and tabs allowed, other control characters not.`,
});
