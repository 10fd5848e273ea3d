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
  /** `Retry-After` in seconds, sent with every 429. */
  readonly retryAfter: number | undefined;

  constructor(status: number, body: ErrorBody, retryAfter?: number) {
    super(body.message);
    this.status = status;
    this.error = body.error;
    this.details = body.details ?? [];
    this.retryAfter = retryAfter;
  }
}

/** An error answer that is not the service's, e.g. a proxy's HTML page for a 502. */
export class UnexpectedResponseError extends Error {
  override readonly name = 'UnexpectedResponseError';
  readonly status: number;
  /** The body as received: parsed JSON, or text. */
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    super(`Unexpected ${status} response`);
    this.status = status;
    this.body = body;
  }
}

/** The error for a response that is not ok, its body already parsed (JSON if it was, else text). */
export function errorOf(response: Response, body: unknown): ApiError | UnexpectedResponseError {
  if (!isErrorBody(body)) return new UnexpectedResponseError(response.status, body);
  const retryAfter = response.headers.get('retry-after');
  return new ApiError(response.status, body, retryAfter === null ? undefined : Number(retryAfter));
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
