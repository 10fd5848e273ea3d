import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/outage.js';
import { createPostgresDatabase } from '../helpers/backends.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/db/terminated-backend.');

/**
 * A server that stops (a restart, a failover, `pg_terminate_backend` by an operator) ends the
 * statements running on it with 57P01 admin_shutdown: the database away (503), not a bug (500).
 */
describe.skipIf(!adminUrl)('PostgreSQL: a statement whose backend the server ends', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Db;

  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl!);
    db = await openDatabase({ kind: 'postgres', url: database.url });
  });

  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('fails with 57P01, which is the database away', async () => {
    const running = sql`select pg_sleep(5)`.execute(db);
    const failed = running.then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      // The pool's one busy connection: wait until the sleep runs, then end its backend.
      await expect
        .poll(async () => {
          const active = await admin.query(
            "select pid from pg_stat_activity where query like 'select pg_sleep%' and state = 'active' and datname = current_database()",
          );
          return active.rows.length;
        })
        .toBe(1);
      await admin.query(
        "select pg_terminate_backend(pid) from pg_stat_activity where query like 'select pg_sleep%' and pid <> pg_backend_pid() and datname = current_database()",
      );
    } finally {
      await admin.end();
    }
    const error = await failed;
    expect(error?.code).toBe('57P01');
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});
