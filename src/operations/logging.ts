import type { FastifyError, FastifyLoggerOptions, FastifyRequest } from 'fastify';
import type { DestinationStream, LoggerOptions } from 'pino';
import { clientIp } from '../http/client-ip.js';

const REDACTED = '[redacted]';

/**
 * Fields whose values are secrets wherever they appear, at any depth: request bodies, header
 * objects (Node lower-cases header names), errors, anything someone logs later.
 */
const SECRET_FIELDS = new Set([
  'password',
  'new_password',
  'code',
  'refresh_token',
  'access_token',
  'token',
  'password_hash',
  'code_hash',
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  // The bytes of a request Node could not parse: its headers, Authorization included.
  'rawPacket',
]);

/**
 * On an error's own fields: `code` is the library's error code (`ECONNREFUSED`, `57P01`), which
 * says what went wrong; PostgreSQL's `detail` quotes row values ("Failing row contains (…)"),
 * password hashes included.
 */
function isSecret(field: string, onError: boolean): boolean {
  if (onError) return field === 'detail' || (field !== 'code' && SECRET_FIELDS.has(field));
  return SECRET_FIELDS.has(field);
}

/** Deeper than this, an object is not walked but replaced by `[too deep]` (cycles end here too). */
const MAX_DEPTH = 10;

type Fields = Record<string, unknown>;

function isPlainObject(value: object): value is Fields {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * The credentials of a URL (`scheme://user:password@`): a configured URL carries them. Up to the
 * authority's last `@`, as URL parsers read it: a password may hold a raw `@` (`:p@ss@host`).
 */
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#]*@/gi;

/**
 * `text` with the credentials of any URL in it replaced: an error may quote a configured URL
 * whole (Node's `ERR_INVALID_URL` keeps it as `input`; a client may put it in its message).
 */
const withoutUrlCredentials = (text: string): string =>
  text.replace(URL_CREDENTIALS, `$1${REDACTED}@`);

/**
 * An error as a plain object (like pino's serializer), so its fields can be walked too; its
 * texts without URL credentials.
 */
function errorFields(error: Error): Fields {
  const fields: Fields = {
    type: error.constructor.name,
    message: error.message,
    stack: error.stack,
  };
  for (const key in error) fields[key] = (error as unknown as Fields)[key];
  for (const key in fields) {
    const value = fields[key];
    if (typeof value === 'string') fields[key] = withoutUrlCredentials(value);
  }
  // ioredis names the failed command with its arguments: a PUBLISH carries the event (a chat
  // message's text), a script its keys (addresses). The command's name says enough.
  const command = fields.command as { name?: unknown } | undefined;
  if (typeof command === 'object' && command !== null) fields.command = { name: command.name };
  if (error.cause !== undefined) fields.cause = error.cause;
  if (error instanceof AggregateError) fields.errors = error.errors;
  return fields;
}

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (depth > MAX_DEPTH) return '[too deep]';
  if (value instanceof Error) return redactFields(errorFields(value), depth, true);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const redacted = redactValue(item, depth + 1);
      if (redacted !== item) (copy ??= [...value])[i] = redacted;
    });
    return copy ?? value;
  }
  // Class instances (requests, replies, buffers) are left to their serializers.
  return isPlainObject(value) ? redactFields(value, depth, false) : value;
}

/** The object with its secrets replaced, copied only when something had to be. */
function redactFields(fields: Fields, depth: number, isError: boolean): Fields {
  let copy: Fields | undefined = isError ? fields : undefined;
  for (const key in fields) {
    const value = fields[key];
    const redacted = isSecret(key, isError) ? REDACTED : redactValue(value, depth + 1);
    if (redacted !== value) (copy ??= { ...fields })[key] = redacted;
  }
  return copy ?? fields;
}

/**
 * Replaces every secret field of a log line's object, at any depth, errors included. A line of
 * plain values (every request's) costs one set lookup per field and no allocation.
 */
function redactSecrets(fields: Fields): Fields {
  return redactFields(fields, 0, false);
}

/** The request as a log line may show it: no query string (it may carry a code or token). */
function requestFields(request: FastifyRequest) {
  return {
    method: request.method,
    url: request.url?.split('?')[0],
    host: request.host,
    remoteAddress: clientIp(request), // the address the limits count, not the header's text
  };
}

interface SerializedError {
  [field: string]: unknown;
  type: string;
  message: string;
  stack: string;
}

/** The service's pino options: redaction by field name at any depth, errors serialized above. */
export function loggerOptions(
  level: string,
  stream?: DestinationStream,
): FastifyLoggerOptions & LoggerOptions & { stream?: DestinationStream } {
  return {
    level,
    formatters: { log: redactSecrets },
    serializers: {
      req: requestFields,
      // Already a plain object by now: redactSecrets serialized it to walk its fields.
      err: (error: FastifyError) => error as unknown as SerializedError,
    },
    ...(stream && { stream }),
  };
}

/**
 * What the process prints of an error that ends it (nothing caught it, or the start failed for a
 * reason that is no operator's mistake): its stack, then its other fields, redacted as a log
 * line's are. Node's own report prints every field as it is.
 */
export function fatalErrorReport(error: unknown): string {
  if (!(error instanceof Error)) return `fatal: ${withoutUrlCredentials(describeThrown(error))}`;
  const { stack, message, type, ...rest } = redactSecrets({ error }).error as Fields;
  const fields = Object.keys(rest).length === 0 ? '' : `\n${JSON.stringify(rest)}`;
  return `fatal: ${String(stack ?? `${String(type)}: ${String(message)}`)}${fields}`;
}

/** A thrown value that is no Error, as text: its redacted fields if it has any; never throws. */
function describeThrown(value: unknown): string {
  try {
    if (typeof value !== 'object' || value === null) return String(value);
    return JSON.stringify(redactSecrets({ thrown: value }).thrown);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
