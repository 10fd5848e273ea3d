import {
  CompiledQuery,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type QueryCompiler,
  type SqliteDialectConfig,
} from 'kysely';

/**
 * Kysely's SQLite dialect with three changes.
 *
 * 1. Every bound value is written `+?` instead of `?`, so SQLite plans each statement once, when it
 *    is prepared. While planning, SQLite peeks at some bound values (an `= ?` it filters on,
 *    `LIMIT ?`, a `LIKE ?`, a value `sqlite_stat4` has samples for) and marks the statement to be
 *    planned again when they change. better-sqlite3 clears the bindings after every run, which
 *    counts as a change, so such a statement was parsed and planned again on every run: a join of
 *    two tables took 6 µs instead of 1, a directory page or a chat send a third more CPU (measured;
 *    bench/README.md has the figures). SQLite does not peek through the unary plus, a no-op on any
 *    value that keeps the plain `?`'s lack of affinity and leaves index use as it was (the plan
 *    tests check it). PostgreSQL plans its prepared statements its own way (database.ts).
 * 2. Migrations run in one transaction, as on PostgreSQL: SQLite's schema changes are
 *    transactional, so a run that dies halfway leaves the schema as it was, not half-made.
 * 3. Transactions begin IMMEDIATE, taking the write lock at once: another process on the same
 *    file (`npm run migrate` beside the service) then waits for it (busy_timeout) instead of
 *    failing when its read would become a write after this one committed.
 * 4. A rollback after SQLite already rolled the transaction back itself (it does on SQLITE_FULL,
 *    SQLITE_IOERR, SQLITE_NOMEM) is done, not an error: Kysely's failing ROLLBACK replaced the
 *    statement's error, so a full disk answered 500 instead of 503 (db/outage.ts).
 */
export class PlannedOnceSqliteDialect extends SqliteDialect {
  constructor(private readonly sqliteConfig: SqliteDialectConfig) {
    super(sqliteConfig);
  }

  override createQueryCompiler(): QueryCompiler {
    return new PlannedOnceSqliteCompiler();
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.sqliteConfig);
  }
}

class PlannedOnceSqliteCompiler extends SqliteQueryCompiler {
  protected override getCurrentParameterPlaceholder(): string {
    return '+?';
  }
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.rollbackTransaction(connection);
    } catch (error) {
      if (!isRolledBackAlready(error)) throw error;
    }
  }
}

const isRolledBackAlready = (error: unknown): boolean =>
  error instanceof Error && /no transaction is active/.test(error.message);
