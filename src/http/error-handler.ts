import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, Errors, type FieldProblem } from '../errors.js';

interface AjvIssue {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Fastify's own errors, by code, as our catalogue's. */
const FRAMEWORK_ERRORS: Record<string, () => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: Errors.unsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: Errors.badRequest,
  FST_ERR_CTP_BODY_TOO_LARGE: Errors.payloadTooLarge,
  FST_ERR_CTP_EMPTY_JSON_BODY: Errors.invalidJson,
  FST_ERR_CTP_INVALID_JSON_BODY: Errors.invalidJson,
  // A path parameter longer than any id we issue cannot name anything.
  FST_ERR_MAX_PARAM_LENGTH: Errors.notFound,
};

/** Errors that mean the database (or its connection) is away for now, not that the code is wrong. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'SQLITE_BUSY',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57P04', // database_dropped
  '3D000', // invalid_catalog_name: the database does not exist (any more)
  '08000',
  '08001',
  '08003',
  '08006',
]);

/** PostgreSQL refusing a value (e.g. a NUL character) that slipped past validation: the client's fault. */
const BAD_VALUE_CODES = new Set(['22021', '22P05', '22001']);

function isUnavailable(error: Error & { code?: unknown }): boolean {
  if (typeof error.code === 'string' && UNAVAILABLE_CODES.has(error.code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connect ECONNREFUSED/.test(
    error.message,
  );
}

function fieldOf(issue: AjvIssue): string {
  const missing = issue.params.missingProperty;
  if (typeof missing === 'string') return missing;
  const top = issue.instancePath.split('/')[1];
  return top === undefined || top === '' ? 'body' : top;
}

function validationProblems(issues: readonly AjvIssue[]): FieldProblem[] {
  return issues.map((issue) => ({ field: fieldOf(issue), message: issue.message ?? 'is invalid' }));
}

export function toApiError(error: FastifyError): ApiError {
  if (error instanceof ApiError) return error;
  if (Array.isArray(error.validation))
    return Errors.validationFailed(validationProblems(error.validation as AjvIssue[]));
  const known = error.code === undefined ? undefined : FRAMEWORK_ERRORS[error.code];
  if (known !== undefined) return known();
  if (error instanceof SyntaxError && error.statusCode === 400) return Errors.invalidJson();
  if (isUnavailable(error)) return Errors.unavailable();
  if (typeof error.code === 'string' && BAD_VALUE_CODES.has(error.code)) return Errors.badRequest();
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return Errors.clientError(status);
  return Errors.internal();
}

/** The one place errors become responses: `{message, error, details?}`, never a stack or SQL. */
export function renderError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const apiError = toApiError(error);
  if (apiError.status >= 500) request.log.error({ err: error }, 'request failed');
  const body = {
    message: apiError.message,
    error: apiError.code,
    ...(apiError.details && { details: apiError.details }),
  };
  return reply.code(apiError.status).headers(apiError.headers).send(body);
}
