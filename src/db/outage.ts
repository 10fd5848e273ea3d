import type { FastifyBaseLogger } from 'fastify';
import type { KyselyPlugin } from 'kysely';
import { OutageLog } from '../outage-log.js';

/** Errors that mean the database (or its connection) is away for now, not that the code is wrong. */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND', // the host name does not resolve (a DNS failure, or its record is gone)
  'EAI_AGAIN', // the resolver did not answer
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57014', // query_canceled: statement_timeout, the server's side of the query timeout
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '57P04', // database_dropped
  '3D000', // invalid_catalog_name: the database does not exist (any more)
  '08000',
  '08001',
  '08003',
  '08004', // sqlserver_rejected_establishment_of_sqlconnection
  '08006',
  '08P01', // protocol_violation: what PgBouncer answers when it cannot get a server connection
  '53300', // too_many_connections: more instances × pool size than max_connections
  '53100', // disk_full
  '53200', // out_of_memory
  '25006', // read_only_sql_transaction: a primary demoted by a failover, or a standby
  '28P01', // invalid_password: the credentials were rotated under the service
  '28000', // invalid_authorization_specification: pg_hba refuses the service now
]);

/**
 * SQLite's, by family: better-sqlite3 gives extended codes (`SQLITE_IOERR_WRITE` once the file
 * system turned read-only under the service, `SQLITE_READONLY_DBMOVED`, `SQLITE_BUSY_SNAPSHOT`).
 * BUSY: another writer held the lock past the timeout; FULL: the disk is full; READONLY: the
 * file or its file system takes no writes; IOERR: the disk failed a read or write.
 */
const UNAVAILABLE_SQLITE_CODE = /^SQLITE_(BUSY|FULL|READONLY|IOERR)(_[A-Z]+)*$/;

// `is not queryable`: pg's client after its connection died between a transaction's queries.
// `cached plan must not change result type`: a statement prepared before a migration changed its
// table, inside a transaction (outside one it runs again: postgres-pool.ts); its connection is
// closed, so a retry succeeds.
const UNAVAILABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connect ECONNREFUSED|is not queryable|cached plan must not change result type/;

/**
 * Whether an error that reached the error handler says the database is away. Only errors that
 * carry no HTTP status of their own get here (see http/error-handler.ts): a socket error with a
 * 4xx status is the client's connection, not the database's.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // A rejection with no Error (a library's `reject()`) is no outage, and must not throw here:
  // the callers run in `.catch` handlers, where a throw would end the process.
  if (!(error instanceof Error)) return false;
  const { code } = error as Error & { code?: unknown };
  if (
    typeof code === 'string' &&
    (UNAVAILABLE_CODES.has(code) || UNAVAILABLE_SQLITE_CODE.test(code))
  )
    return true;
  return UNAVAILABLE_MESSAGES.test(error.message);
}

/** A database file or its directory that cannot be opened or created (SQLite), as error codes. */
const UNOPENABLE_FILE_CODES = new Set([
  ...['SQLITE_CANTOPEN', 'SQLITE_NOTADB', 'SQLITE_PERM'],
  ...['EACCES', 'EPERM', 'EEXIST', 'ENOTDIR', 'EISDIR', 'EROFS', 'ENOSPC'],
]);

/**
 * Why the service could not open its database at start-up, in one line, when that is an
 * operator's matter (nobody listens, wrong credentials or database name, a path that is a
 * directory) rather than a bug; else undefined. Looks through the error's causes (a failed
 * migration wraps the driver's error). Its message names no password: the URL is never in it.
 */
export function cannotOpenDatabase(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    const { code } = cause as Error & { code?: unknown };
    const unopenable = typeof code === 'string' && UNOPENABLE_FILE_CODES.has(code);
    if (unopenable || isDatabaseUnavailable(cause))
      return `cannot open the database: ${cause.message || String(code)}`;
  }
  return undefined;
}

export function databaseOutageLog(log: FastifyBaseLogger, clock: () => number): OutageLog {
  return new OutageLog({
    dependency: 'database',
    meanwhile: 'requests that need it answer 503 unavailable until it is back',
    counted: (count) => `${count} ${count === 1 ? 'request' : 'requests'} refused`,
    log,
    clock,
    // A read-only database (a demoted primary, a standby) answers every read and refuses every
    // write: each answered read would end the outage, and each refused write start it again with
    // its stack. Back means 10 s without a refusal (and the line says when it first answered).
    settleMs: 10_000,
  });
}

/** Tells the outage log whenever the database answers a query, so its return is logged. */
export function reportAnswers(outage: OutageLog): KyselyPlugin {
  return {
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      outage.answered();
      return args.result;
    },
  };
}

/**
 * A background worker's failed round (the mail outbox, housekeeping): a database outage is already
 * in the log once, with a count, so it goes there; anything else is a warning with its stack.
 */
export function reportWorkerFailure(
  error: unknown,
  databaseOutage: OutageLog,
  log: FastifyBaseLogger,
  message: string,
): void {
  if (!(error instanceof Error) || !isDatabaseUnavailable(error))
    return log.warn({ err: error }, message);
  if (!databaseOutage.isAway) databaseOutage.failed(error);
}
