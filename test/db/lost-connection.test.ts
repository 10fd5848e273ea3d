import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/outage.js';
import { createPostgresDatabase } from '../helpers/backends.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/db/lost-connection.');

describe.skipIf(!adminUrl)('PostgreSQL: a connection killed by the server', () => {
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

  it('while a transaction holds it between queries: that transaction fails, the process lives on', async () => {
    const unheard: unknown[] = [];
    const onUncaught = (error: unknown) => unheard.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const transaction = db.transaction().execute(async (trx) => {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
        await terminateBackend(rows[0]!.pid);
        // The FATAL message arrives while no query runs on this client.
        await new Promise((resolve) => setTimeout(resolve, 200));
        await sql`select 1`.execute(trx);
      });
      await expect(transaction).rejects.toThrow();
      expect(unheard).toEqual([]);
      // The pool dropped the dead client: the next query gets a fresh connection.
      const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db);
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  // A server that stops (a restart, a failover, an operator) ends what runs on it with 57P01
  // admin_shutdown: the database away (503), not a bug (500).
  it('while a statement runs on it: the statement fails with 57P01, which is the database away', async () => {
    const failed = sql`select pg_sleep(5)`.execute(db).then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    // Outside a transaction: a rollback on the dead connection would fail with an error of its own.
    await expect.poll(() => sleepingBackend()).toBeDefined();
    await terminateBackend((await sleepingBackend())!);
    const error = await failed;
    expect(error?.code).toBe('57P01');
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  async function sleepingBackend(): Promise<number | undefined> {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      const { rows } = await admin.query(
        "select pid from pg_stat_activity where datname = current_database() and state = 'active' and query like 'select pg_sleep%'",
      );
      return rows[0]?.pid;
    } finally {
      await admin.end();
    }
  }

  async function terminateBackend(pid: number): Promise<void> {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query('select pg_terminate_backend($1)', [pid]);
    await admin.end();
  }
});
