import {
  CompiledQuery,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type PostgresDialectConfig,
  type TransactionSettings,
} from 'kysely';

/** Kysely's own key: an instance of a build that still takes Kysely's lock waits for ours. */
const MIGRATION_LOCK_ID = '3853314791062309107';
const LOCK_WAIT_MS = 3_600_000;

/**
 * PostgreSQL for the migration run: Kysely's one transaction holds the migration lock and lifts
 * the statement timeout itself, as its first statements, where Kysely takes a session-level lock
 * beside the transaction.
 *
 * - Behind PgBouncer in transaction mode, a session-level lock, the transaction and the unlock may
 *   each run on another server connection: the lock leaks (later starts wait an hour) or two
 *   instances both hold it. A transaction's own lock goes with its commit or rollback.
 * - A `statement_timeout` of 0 as a startup parameter is dropped by `pg` (falsy), and PgBouncer
 *   refuses the parameter: the role's or database's timeout cut off the wait for another instance's
 *   migration, or a long index build. `SET LOCAL` is the transaction's, wherever it runs.
 */
export class MigrationPostgresDialect extends PostgresDialect {
  constructor(private readonly pgConfig: PostgresDialectConfig) {
    super(pgConfig);
  }

  override createAdapter(): DialectAdapter {
    return new LockInTransactionAdapter();
  }

  override createDriver(): Driver {
    return new LockingPostgresDriver(this.pgConfig);
  }
}

class LockInTransactionAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

class LockingPostgresDriver extends PostgresDriver {
  override async beginTransaction(
    connection: DatabaseConnection,
    settings: TransactionSettings,
  ): Promise<void> {
    await super.beginTransaction(connection, settings);
    for (const statement of [
      'set local statement_timeout = 0',
      `set local lock_timeout = ${LOCK_WAIT_MS}`,
      `select pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`,
      // The hour is the wait for another instance's run; the migrations' own statements wait for
      // table locks as long as the role or database says, as they did under Kysely's lock.
      'set local lock_timeout to default',
    ]) {
      await connection.executeQuery(CompiledQuery.raw(statement));
    }
  }
}
