import type { components } from './schema.gen.js';

/** The error body every 4xx and 5xx of the service carries. */
export type ErrorBody = components['schemas']['ErrorBody'];
/** Every error code of the service: the OpenAPI document's enum, so a new code shows up here. */
export type ApiErrorCode = ErrorBody['error'];
export type FieldProblem = NonNullable<ErrorBody['details']>[number];

/** An error answer of the service, e.g. `401 invalid_credentials` or `400 weak_password`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly error: ApiErrorCode;
  /** Which fields broke which rule: on `validation_failed` and `weak_password`; `[]` otherwise. */
  readonly details: readonly FieldProblem[];
  /** `Retry-After` in seconds, sent with every 429 (a proxy's HTTP date becomes seconds). */
  readonly retryAfter: number | undefined;
  /** `X-Request-Id`: names the answer's line in the service's log, for a support request. */
  readonly requestId: string | undefined;

  constructor(status: number, body: ErrorBody, retryAfter?: number, requestId?: string) {
    super(body.message);
    this.status = status;
    this.error = body.error;
    this.details = body.details ?? [];
    this.retryAfter = retryAfter;
    this.requestId = requestId;
  }
}

/** An error answer that is not the service's, e.g. a proxy's HTML page for a 502. */
export class UnexpectedResponseError extends Error {
  override readonly name = 'UnexpectedResponseError';
  readonly status: number;
  /** The body as received: parsed JSON, or text. */
  readonly body: unknown;
  /** `Retry-After` in seconds, when it came (a gateway's or CDN's 429 or 503). */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: unknown, retryAfter?: number) {
    super(`Unexpected ${status} response`);
    this.status = status;
    this.body = body;
    this.retryAfter = retryAfter;
  }
}

/** The error for a response that is not ok, its body already parsed (JSON if it was, else text). */
export function errorOf(response: Response, body: unknown): ApiError | UnexpectedResponseError {
  const retryAfter = secondsToWait(response.headers.get('retry-after'));
  if (!isErrorBody(body)) return new UnexpectedResponseError(response.status, body, retryAfter);
  const requestId = response.headers.get('x-request-id') ?? undefined;
  return new ApiError(response.status, body, retryAfter, requestId);
}

/**
 * `Retry-After` as seconds from now. The service sends whole seconds; a proxy or gateway in front
 * of it may send an HTTP date instead (RFC 9110, section 10.2.3). Anything else is no advice.
 */
export function secondsToWait(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value);
  // Every HTTP-date form begins with a day's name (Date.parse alone would take "1.5" as a date),
  // and is in GMT, which the asctime form leaves unsaid.
  if (!/^[A-Za-z]{3}/.test(value)) return undefined;
  const at = Date.parse(/ GMT$/.test(value) ? value : `${value} GMT`);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false;
  const { error, message, details } = body as Record<string, unknown>;
  return (
    typeof error === 'string' &&
    typeof message === 'string' &&
    (details === undefined || Array.isArray(details))
  );
}
