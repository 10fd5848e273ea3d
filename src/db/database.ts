import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresAdapter, PostgresDialect, sql, type LogConfig } from 'kysely';
import type { Config, DatabaseLocation } from '../config.js';
import { MigrationPostgresDialect } from './migration-dialect.js';
import { PlannedOnceSqliteDialect } from './sqlite-dialect.js';
import { kyselyPool } from './postgres-pool.js';
import type { Database } from './tables.js';

export type Db = Kysely<Database>;

export interface DatabaseOptions {
  /** PostgreSQL pool size per instance. */
  readonly poolSize?: number;
  /** Kysely's query log (the benchmark records the statements it explains). */
  readonly log?: LogConfig;
  /** PostgreSQL: how long a query may take before the client gives up (0: no limit). */
  readonly queryTimeoutMs?: number;
  /**
   * PostgreSQL: whether each connection asks the server to cancel a statement at the same
   * timeout (the startup parameter `statement_timeout`). PgBouncer refuses the parameter: there,
   * the role's own setting stands (`ALTER ROLE … SET statement_timeout`). Default true.
   */
  readonly statementTimeoutOnConnect?: boolean;
  /** PostgreSQL: the migration run's connection (migration-dialect.ts). */
  readonly forMigrations?: boolean;
}

/** The service's own connections, as configured. */
export const serviceDatabaseOptions = (
  config: Pick<Config, 'databasePoolSize' | 'statementTimeoutSetBy'>,
): DatabaseOptions => ({
  poolSize: config.databasePoolSize,
  statementTimeoutOnConnect: config.statementTimeoutSetBy === 'service',
});

/** Only the driver in use is loaded: an SQLite deployment never pays for `pg`, and vice versa. */
export async function openDatabase(
  location: DatabaseLocation,
  options: DatabaseOptions = {},
): Promise<Db> {
  return location.kind === 'sqlite'
    ? openSqlite(location.path, options)
    : openPostgres(location.url, options);
}

async function openSqlite(path: string, options: DatabaseOptions): Promise<Db> {
  const { default: SQLite } = await import('better-sqlite3');
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SQLite(path);
  sqlite.pragma('journal_mode = WAL');
  // WAL + NORMAL (as Rails 8 and SQLite's docs recommend): a commit survives a crash or kill of
  // the process; only a power cut or OS crash may roll back the last commits, never corrupt the
  // file. FULL would fsync on every commit, on the event loop's thread: 3 ms of stall per write.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  return new Kysely<Database>({
    dialect: new PlannedOnceSqliteDialect({ database: withStatementCache(sqlite) }),
    ...(options.log !== undefined && { log: options.log }),
  });
}

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely prepares every query anew; preparing costs more than running our small queries. The
 * service issues a small, fixed set of SQL texts, so their prepared statements are kept.
 */
function withStatementCache(sqlite: BetterSqlite3.Database) {
  const statements = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(text: string) {
      let statement = statements.get(text);
      if (statement === undefined) {
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
        statement = sqlite.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

const INT8_OID = 20;

async function openPostgres(url: string, options: DatabaseOptions): Promise<Db> {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // Fail fast while the server is away, so requests answer 503 instead of hanging.
    connectionTimeoutMillis: 2_000,
    query_timeout: options.queryTimeoutMs ?? 10_000,
    // The server gives up at the same moment, so a statement the client stopped waiting for does
    // not run on holding its locks (the client is closed all the same: postgres-pool.ts).
    ...(options.statementTimeoutOnConnect !== false && {
      statement_timeout: options.queryTimeoutMs ?? 10_000,
    }),
    idleTimeoutMillis: 30_000,
    // Our BIGINT columns hold epoch milliseconds, well inside Number's exact range.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID
          ? Number
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  // A client whose server goes away emits 'error': on the pool while idle, on the client itself
  // while checked out (e.g. between a transaction's queries). An unheard 'error' kills the process;
  // the queries that fail already answer 503, and the pool drops the dead client on release.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  const Dialect = options.forMigrations === true ? MigrationPostgresDialect : PostgresDialect;
  return new Kysely<Database>({
    dialect: new Dialect({ pool: kyselyPool(pool) }),
    ...(options.log !== undefined && { log: options.log }),
  });
}

/**
 * Runs `work` in a transaction that holds a PostgreSQL advisory lock, so instances starting
 * together do it one at a time. SQLite serves one process and its write transaction suffices.
 */
export function withStartupLock<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    if (db.getExecutor().adapter instanceof PostgresAdapter) {
      await sql`select pg_advisory_xact_lock(${STARTUP_LOCK_ID})`.execute(trx);
    }
    return work(trx);
  });
}

const STARTUP_LOCK_ID = 727_274_001;
