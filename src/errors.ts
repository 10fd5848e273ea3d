/**
 * The one error type of the service and the catalogue of every error it answers with.
 * Services and routes throw `Errors.x()`; `http/error-handler.ts` renders them as
 * `{message, error, details?}`.
 */

export interface FieldProblem {
  readonly field: string;
  readonly message: string;
}

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: readonly FieldProblem[],
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

function define(status: number, code: string, message: string) {
  return (): ApiError => new ApiError(status, code, message);
}

function defineWithDetails(status: number, code: string, message: string) {
  return (details: readonly FieldProblem[]): ApiError =>
    new ApiError(status, code, message, details);
}

function defineRetryable(status: number, code: string, message: string) {
  return (retryAfterSeconds: number): ApiError =>
    new ApiError(status, code, message, undefined, {
      'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
    });
}

export const Errors = {
  // Generic HTTP cases
  invalidJson: define(400, 'invalid_json', 'The request body is not valid JSON.'),
  unsupportedMediaType: define(
    415,
    'unsupported_media_type',
    'Request bodies must be sent as application/json.',
  ),
  payloadTooLarge: define(413, 'payload_too_large', 'The request body is larger than 16 KiB.'),
  notFound: define(404, 'not_found', 'The requested resource was not found.'),
  methodNotAllowed: (allowed: readonly string[]) =>
    new ApiError(
      405,
      'method_not_allowed',
      'This method is not allowed on this resource.',
      undefined,
      {
        allow: allowed.join(', '),
      },
    ),
  validationFailed: defineWithDetails(400, 'validation_failed', 'The request is invalid.'),
  badRequest: define(400, 'bad_request', 'The request could not be understood.'),
  /** Any other 4xx the framework raises (e.g. 414, 431), with its own status. */
  clientError: (status: number) =>
    new ApiError(status, 'bad_request', 'The request could not be understood.'),
  rateLimited: defineRetryable(
    429,
    'rate_limited',
    'Too many requests from this address; try again later.',
  ),
  unavailable: define(
    503,
    'unavailable',
    'The service is temporarily unavailable; try again shortly.',
  ),
  internal: define(500, 'internal_error', 'Something went wrong on our side.'),

  // Authentication
  unauthorized: () =>
    new ApiError(401, 'unauthorized', 'A valid access token is required.', undefined, {
      'www-authenticate': 'Bearer',
    }),
  invalidCredentials: define(
    401,
    'invalid_credentials',
    'The e-mail address or password is incorrect.',
  ),
  invalidRefreshToken: define(
    401,
    'invalid_refresh_token',
    'The refresh token is invalid, expired or revoked.',
  ),
  tooManyAttempts: defineRetryable(
    429,
    'too_many_attempts',
    'Too many failed attempts; try again later.',
  ),
  tooManyRequests: defineRetryable(
    429,
    'too_many_requests',
    'A code was sent to this address less than a minute ago; wait before asking again.',
  ),

  // Account rules
  emailTaken: define(409, 'email_taken', 'An account with this e-mail address already exists.'),
  emailMismatch: define(
    403,
    'email_mismatch',
    'The e-mail address is not the one of the signed-in account.',
  ),
  invalidCode: define(400, 'invalid_code', 'The code is invalid or has expired.'),
  incorrectPassword: define(400, 'incorrect_password', 'The current password is incorrect.'),
  samePassword: define(400, 'same_password', 'The new password must differ from the current one.'),
  weakPassword: defineWithDetails(
    400,
    'weak_password',
    'The new password does not meet the password policy.',
  ),
} as const;
