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

/**
 * A catalogue entry: makes its error, and names its code and usual status without being called, so
 * the OpenAPI document lists every code of the catalogue (`ERROR_CODES`) with nothing kept by hand.
 */
export type CatalogueEntry = ((...args: never) => ApiError) & {
  readonly status: number;
  readonly code: string;
};

function entry<A extends unknown[]>(status: number, code: string, make: (...args: A) => ApiError) {
  return Object.assign(make, { status, code });
}

function define(status: number, code: string, message: string) {
  return entry(status, code, () => new ApiError(status, code, message));
}

function defineWithDetails(status: number, code: string, message: string) {
  return entry(
    status,
    code,
    (details: readonly FieldProblem[]) => new ApiError(status, code, message, details),
  );
}

function defineWithHeaders<A extends unknown[]>(
  status: number,
  code: string,
  message: string,
  headers: (...args: A) => Readonly<Record<string, string>>,
) {
  return entry(
    status,
    code,
    (...args: A) => new ApiError(status, code, message, undefined, headers(...args)),
  );
}

function defineRetryable(status: number, code: string, message: string) {
  return defineWithHeaders(status, code, message, (retryAfterSeconds: number) => ({
    'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))),
  }));
}

export const Errors = {
  // Generic HTTP cases
  invalidJson: define(400, 'invalid_json', 'The request body is not valid JSON.'),
  unsupportedMediaType: define(
    415,
    'unsupported_media_type',
    'Request bodies must be sent as application/json.',
  ),
  // RFC 9110 §12.5.3: a 415 for a content coding names the ones accepted.
  unsupportedContentEncoding: defineWithHeaders(
    415,
    'unsupported_media_type',
    'Request bodies must be sent uncompressed (no Content-Encoding).',
    () => ({ 'accept-encoding': 'identity' }),
  ),
  payloadTooLarge: define(413, 'payload_too_large', 'The request body is larger than 16 KiB.'),
  notFound: define(404, 'not_found', 'The requested resource was not found.'),
  methodNotAllowed: defineWithHeaders(
    405,
    'method_not_allowed',
    'This method is not allowed on this resource.',
    (allowed: readonly string[]) => ({ allow: allowed.join(', ') }),
  ),
  /** A plain HTTP request to the chat WebSocket's path. */
  upgradeRequired: defineWithHeaders(
    426,
    'upgrade_required',
    'This endpoint speaks WebSocket only: send an upgrade request.',
    () => ({ upgrade: 'websocket', connection: 'Upgrade' }),
  ),
  validationFailed: defineWithDetails(400, 'validation_failed', 'The request is invalid.'),
  badRequest: define(400, 'bad_request', 'The request could not be understood.'),
  /** Any other 4xx the framework raises (e.g. 414, 431), with its own status. */
  clientError: entry(
    400,
    'bad_request',
    (status: number) => new ApiError(status, 'bad_request', 'The request could not be understood.'),
  ),
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
  unauthorized: defineWithHeaders(401, 'unauthorized', 'A valid access token is required.', () => ({
    'www-authenticate': 'Bearer',
  })),
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

  // Paging (every paged list)
  invalidCursor: define(
    400,
    'invalid_cursor',
    'The cursor is invalid, or belongs to a different query.',
  ),

  // Influencer group
  emailNotConfirmed: define(
    403,
    'email_not_confirmed',
    'Confirm your e-mail address before creating an influencer profile.',
  ),
  alreadyInfluencer: define(
    409,
    'already_influencer',
    'This account already has an influencer profile.',
  ),
  notInfluencer: define(404, 'not_influencer', 'This account has no influencer profile.'),
  handleTaken: define(409, 'handle_taken', 'This handle is taken.'),
  cannotFollowSelf: define(400, 'cannot_follow_self', 'You cannot follow yourself.'),
  cannotFollow: define(403, 'cannot_follow', 'You cannot follow this user.'),
  userBlocked: define(403, 'user_blocked', 'You have blocked this user.'),
  /** A per-user limit on changes (e.g. follows), as opposed to the per-address `rateLimited`. */
  tooManyChanges: defineRetryable(
    429,
    'rate_limited',
    'Too many changes in a short time; try again later.',
  ),

  // Chat and blocks
  cannotMessageSelf: define(
    400,
    'cannot_message_self',
    'You cannot start a conversation with yourself.',
  ),
  notFollowing: define(
    403,
    'not_following',
    'This influencer accepts messages from followers only; follow them first.',
  ),
  messagesDisabled: define(
    403,
    'messages_disabled',
    'This influencer does not accept new messages.',
  ),
  cannotMessage: define(403, 'cannot_message', 'You cannot send messages to this user.'),
  idempotencyKeyReused: define(
    422,
    'idempotency_key_reused',
    'This client_message_id was already used for another message.',
  ),
  notMessageAuthor: define(
    403,
    'not_message_author',
    'Only the author of a message may change it.',
  ),
  editWindowExpired: define(
    403,
    'edit_window_expired',
    'A message can only be edited within 15 minutes of sending it.',
  ),
  messageDeleted: define(409, 'message_deleted', 'This message has been deleted.'),
  chatRateLimited: defineRetryable(
    429,
    'rate_limited',
    'You are sending messages or starting conversations too fast; try again later.',
  ),
  cannotBlockSelf: define(400, 'cannot_block_self', 'You cannot block yourself.'),
} as const satisfies Record<string, CatalogueEntry>;

/** Every code the service answers with, sorted: the OpenAPI enum of the error body's `error`. */
export const ERROR_CODES: readonly string[] = [
  ...new Set(Object.values(Errors).map((e: CatalogueEntry) => e.code)),
].sort();
