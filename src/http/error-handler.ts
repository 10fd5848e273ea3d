import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, Errors, type FieldProblem } from '../errors.js';
import { isDatabaseUnavailable } from '../db/outage.js';
import type { OutageLog } from '../outage-log.js';
import { patternRule } from './schemas.js';

interface AjvIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Fastify's own errors, by code, as our catalogue's. */
const FRAMEWORK_ERRORS: Record<string, () => ApiError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: Errors.unsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: Errors.badRequest,
  FST_ERR_CTP_BODY_TOO_LARGE: Errors.payloadTooLarge,
  FST_ERR_CTP_INVALID_JSON_BODY: Errors.invalidJson,
  // A path parameter longer than any id we issue cannot name anything.
  FST_ERR_MAX_PARAM_LENGTH: Errors.notFound,
};

/** PostgreSQL refusing a value (e.g. a NUL character) that slipped past validation: the client's fault. */
const BAD_VALUE_CODES = new Set(['22021', '22P05', '22001']);

/** The top-level field at fault (`links` for `/links/0/url`, also when `url` is missing). */
function fieldOf(issue: AjvIssue): string {
  const top = issue.instancePath.split('/')[1];
  if (top !== undefined && top !== '') return top;
  const missing = issue.params.missingProperty;
  return typeof missing === 'string' ? missing : 'body';
}

/** Ajv's words, except for a `pattern`: what it asks for, as its schema says (`matching`). */
function messageOf(issue: AjvIssue): string {
  const { pattern } = issue.params;
  if (issue.keyword === 'pattern' && typeof pattern === 'string')
    return patternRule(pattern) ?? 'is not in the accepted form';
  return issue.message ?? 'is invalid';
}

/** Enough to fix a form with; a body of 16 KiB could otherwise name a problem per array item. */
const MAX_PROBLEMS = 20;

/** Each field's problems once (ajv reports every array item that breaks a rule). */
function validationProblems(issues: readonly AjvIssue[]): FieldProblem[] {
  const problems = new Map<string, FieldProblem>();
  for (const issue of issues) {
    const problem = { field: fieldOf(issue), message: messageOf(issue) };
    problems.set(`${problem.field}\n${problem.message}`, problem);
    if (problems.size === MAX_PROBLEMS) break;
  }
  return [...problems.values()];
}

/**
 * What a failure is, which decides how it is logged: an answer the contract foresees (the
 * client's mistakes, limits, our own 503 while draining), the database being away, or a bug.
 */
type Cause = 'expected' | 'database' | 'bug';

interface Verdict {
  readonly apiError: ApiError;
  readonly cause: Cause;
}

const expected = (apiError: ApiError): Verdict => ({ apiError, cause: 'expected' });

/**
 * The client's errors first, by what they are and then by their own 4xx status: a connection the
 * client drops mid-body is `ECONNRESET` with status 400, and must never pass for a database outage.
 * Only what remains is the database being away, or a bug.
 */
function classify(error: FastifyError): Verdict {
  if (error instanceof ApiError) return expected(error);
  if (Array.isArray(error.validation))
    return expected(Errors.validationFailed(validationProblems(error.validation as AjvIssue[])));
  const known = error.code === undefined ? undefined : FRAMEWORK_ERRORS[error.code];
  if (known !== undefined) return expected(known());
  if (error instanceof SyntaxError && error.statusCode === 400)
    return expected(Errors.invalidJson());
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500)
    return expected(Errors.clientError(status));
  if (typeof error.code === 'string' && BAD_VALUE_CODES.has(error.code))
    return expected(Errors.badRequest());
  if (isDatabaseUnavailable(error)) return { apiError: Errors.unavailable(), cause: 'database' };
  return { apiError: Errors.internal(), cause: 'bug' };
}

/** The contract's error body: `{message, error, details?}`, never a stack or SQL. */
export function errorBody(apiError: ApiError) {
  return {
    message: apiError.message,
    error: apiError.code,
    ...(apiError.details && { details: apiError.details }),
  };
}

/**
 * The one place errors become responses. A bug is logged with its stack; a database outage goes
 * to its outage log (one line when it goes away, then counts, not a line per request); a request
 * whose client hung up is logged once, at info, by its onRequestAbort hook (http/request-log.ts).
 */
export function errorHandler(databaseOutage: OutageLog) {
  return function renderError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const { apiError, cause } = classify(error);
    if (cause === 'bug') request.log.error({ err: error }, 'request failed');
    else if (cause === 'database') databaseOutage.failed(error);
    return reply.code(apiError.status).headers(apiError.headers).send(errorBody(apiError));
  };
}
