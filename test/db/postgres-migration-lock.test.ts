import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, serviceDatabaseOptions, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../helpers/backends.js';

// Instances starting together: the second waits for the first one's migration, however long it
// takes (an index over a large table), whatever timeout the pool or the role has, and the lock
// lives in the migration's transaction (a transaction-mode PgBouncer may run each statement on
// another server connection).

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/db/postgres-migration-lock.');
/** Kysely's key, which a build taking Kysely's own lock also waits for. */
const MIGRATION_LOCK = '3853314791062309107';

type Database = Awaited<ReturnType<typeof createPostgresDatabase>>;

/** Another instance, holding the migration lock until `release()`. */
async function holdLock(url: string): Promise<pg.Client & { release(): Promise<void> }> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  await other.query(`select pg_advisory_lock(${MIGRATION_LOCK})`);
  return Object.assign(other, {
    async release() {
      await other.query(`select pg_advisory_unlock(${MIGRATION_LOCK})`);
      await other.end();
    },
  });
}

const releasedAfter = (holder: { release(): Promise<void> }, ms: number) =>
  new Promise<void>((resolve) => setTimeout(() => void holder.release().then(resolve), ms));

/** This build's instance starting on `url`, connected as the service connects. */
async function startOn(url: string, run: (db: Db, outcome: Promise<string>) => Promise<void>) {
  const config = loadConfig({
    DATABASE_URL: url,
    APP_SECRET: randomBytes(32).toString('base64url'),
  });
  const db = await openDatabase(config.database, serviceDatabaseOptions(config));
  try {
    const outcome = migrate(config.database, db).then(
      (newer) => (newer.length === 0 ? 'migrated' : `started; newer: ${newer.join(',')}`),
      (error: Error) => `failed: ${error.message}`,
    );
    await run(db, outcome);
  } finally {
    await db.destroy();
  }
}

describe.runIf(adminUrl)('instances migrating PostgreSQL at once', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl as string);
  });
  afterAll(() => database.drop());

  it('the second waits for the first migration (here 12 s) instead of failing', async () => {
    const released = releasedAfter(await holdLock(database.url), 12_000);
    await startOn(database.url, async (_db, outcome) => {
      expect(await outcome).toBe('migrated');
    });
    await released;
  }, 40_000);

  it('takes the lock inside its transaction (pg_advisory_xact_lock), not for the session', async () => {
    const other = await holdLock(database.url);
    await startOn(database.url, async (_db, outcome) => {
      try {
        await expect
          .poll(async () => {
            const { rows } = await other.query<{ query: string }>(
              `select query from pg_stat_activity
                where datname = $1 and wait_event_type = 'Lock' and wait_event = 'advisory'`,
              [database.name],
            );
            return rows[0]?.query ?? '';
          })
          .toMatch(/pg_advisory_xact_lock/);
      } finally {
        await other.release();
      }
      expect(await outcome).toBe('migrated');
    });
  }, 40_000);

  it('a newer build migrating meanwhile: this one starts on what it left', async () => {
    await startOn(database.url, async (_db, outcome) => {
      expect(await outcome).toBe('migrated'); // the database as this build left it
    });
    // The newer build's instance holds the lock while it runs its newer migration (2 s).
    const newer = await holdLock(database.url);
    await newer.query('begin');
    await newer.query(`insert into kysely_migration (name, timestamp) values ('999_future', $1)`, [
      new Date().toISOString(),
    ]);
    const done = new Promise<void>((resolve) =>
      setTimeout(
        () =>
          void newer
            .query('commit')
            .then(() => newer.release())
            .then(resolve),
        2_000,
      ),
    );
    await startOn(database.url, async (_db, outcome) => {
      expect(await outcome).toBe('started; newer: 999_future');
    });
    await done;
  }, 40_000);
});

describe.runIf(adminUrl)('migration statements and the configured lock_timeout', () => {
  let database: Database;
  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl as string);
  });
  afterAll(() => database.drop());

  // The hour's lock_timeout is for the wait on the migration lock only: a migration blocked on a
  // table lock gives up at the operator's timeout, instead of queueing the service's queries on
  // that table behind it for an hour.
  it('a migration blocked on a table lock gives up at the database lock_timeout (2 s)', async () => {
    await startOn(database.url, async (_db, outcome) => {
      expect(await outcome).toBe('migrated');
    });
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query(`alter database ${database.name} set lock_timeout = '2s'`);
    // The newest migration pending again, and every table of the service held (as another
    // deploy's DDL, a VACUUM FULL or a backup might hold one), whichever that migration touches.
    // Kysely's own tables stay free: its set-up outside the run's transaction reads them.
    await admin.query(
      `delete from kysely_migration where name = (select max(name) from kysely_migration)`,
    );
    const { rows } = await admin.query<{ name: string }>(
      `select tablename as name from pg_tables
        where schemaname = 'public' and tablename not like 'kysely_%'`,
    );
    await admin.query('begin');
    await admin.query(
      `lock table ${rows.map((row) => row.name).join(', ')} in access exclusive mode`,
    );
    try {
      await startOn(database.url, async (_db, outcome) => {
        const waited = new Promise<string>((resolve) =>
          setTimeout(() => resolve('still waiting after 8 s'), 8_000),
        );
        expect(await Promise.race([outcome, waited])).toMatch(/lock timeout/);
      });
    } finally {
      await admin.query('rollback');
      await admin.end();
    }
  }, 30_000);
});

describe.runIf(adminUrl)('migrations under a role with a default statement_timeout', () => {
  const role = `test_mig_role_${randomBytes(6).toString('hex')}`;
  let database: Database;
  let roleUrl: string;
  const admin = new pg.Client({ connectionString: adminUrl });
  beforeAll(async () => {
    await admin.connect();
    await admin.query(`create role ${role} login`);
    await admin.query(`alter role ${role} set statement_timeout = '2s'`);
    database = await createPostgresDatabase(adminUrl as string);
    await admin.query(`alter database ${database.name} owner to ${role}`);
    const owner = new pg.Client({ connectionString: database.url });
    await owner.connect();
    await owner.query(`alter schema public owner to ${role}`);
    await owner.end();
    const url = new URL(database.url);
    url.username = role;
    roleUrl = url.toString();
  });
  afterAll(async () => {
    await database.drop();
    await admin.query(`drop role if exists ${role}`);
    await admin.end();
  });

  // pg drops a statement_timeout of 0 from the startup parameters (falsy), so the role's 2 s
  // applied to the wait for the lock.
  it('a second instance waits past the role’s timeout for the first one’s migration', async () => {
    const released = releasedAfter(await holdLock(database.url), 5_000);
    await startOn(roleUrl, async (_db, outcome) => {
      expect(await outcome).toBe('migrated');
    });
    await released;
  }, 40_000);
});
