import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createPostgresDatabase } from '../helpers/backends.js';

// Instances starting together: the second waits for the first one's migration, however long it
// takes (an index over a large table), past the pool's 10 s query timeout.

const adminUrl = process.env.TEST_DATABASE_URL;
const KYSELY_MIGRATION_LOCK = '3853314791062309107';

describe.runIf(adminUrl)('two instances migrating PostgreSQL at once', () => {
  let database: Awaited<ReturnType<typeof createPostgresDatabase>>;
  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl as string);
  });
  afterAll(() => database.drop());

  it('the second waits for the first migration (here 12 s) instead of failing', async () => {
    // Instance A is in the middle of a long migration: it holds Kysely's migration lock.
    const a = new pg.Client({ connectionString: database.url });
    await a.connect();
    await a.query(`select pg_advisory_lock(${KYSELY_MIGRATION_LOCK})`);
    const released = new Promise<void>((resolve) =>
      setTimeout(() => {
        void a
          .query(`select pg_advisory_unlock(${KYSELY_MIGRATION_LOCK})`)
          .then(() => a.end())
          .then(resolve);
      }, 12_000),
    );

    // Instance B starts meanwhile.
    const config = loadConfig({
      DATABASE_URL: database.url,
      APP_SECRET: randomBytes(32).toString('base64url'),
    });
    const b = await openDatabase(config.database);
    try {
      const started = Date.now();
      const outcome = await migrate(config.database, b).then(
        () => 'migrated',
        (error: Error) =>
          `failed after ${Math.round((Date.now() - started) / 1000)} s: ${error.message}`,
      );
      expect(outcome).toBe('migrated');
    } finally {
      await released;
      await b.destroy();
    }
  }, 40_000);
});
