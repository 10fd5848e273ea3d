import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * The backends every suite runs on: SQLite always; PostgreSQL + Redis when TEST_DATABASE_URL and
 * TEST_REDIS_URL are set (.ci/run sets them). Each `provision()` makes a fresh database.
 */
export interface Backend {
  readonly name: string;
  provision(): Promise<ProvisionedBackend>;
}

export interface ProvisionedBackend {
  readonly env: Record<string, string>;
  drop(): Promise<void>;
}

const sqlite: Backend = {
  name: 'sqlite',
  async provision() {
    const dir = mkdtempSync(join(tmpdir(), 'account-service-test-'));
    return {
      env: { DATABASE_URL: `sqlite:${join(dir, 'auth.db')}` },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
};

export async function createPostgresDatabase(
  adminUrl: string,
): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const name = `test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

function postgres(databaseUrl: string, redisUrl: string | undefined): Backend {
  return {
    name: redisUrl ? 'postgres+redis' : 'postgres',
    async provision() {
      const database = await createPostgresDatabase(databaseUrl);
      return {
        env: {
          DATABASE_URL: database.url,
          APP_SECRET: randomBytes(32).toString('base64url'),
          // Its own keys and channels: test files run side by side on one Redis, and one file's
          // lost publish (a resync for every socket) or counters must not reach another's.
          ...(redisUrl && { REDIS_URL: redisUrl, REDIS_PREFIX: `${database.name}:` }),
        },
        drop: () => database.drop(),
      };
    },
  };
}

export const backends: Backend[] = [sqlite];
const testDatabaseUrl = process.env.TEST_DATABASE_URL;
if (testDatabaseUrl) {
  backends.push(postgres(testDatabaseUrl, process.env.TEST_REDIS_URL || undefined));
} else if (!process.env.__BACKENDS_NOTICE) {
  process.env.__BACKENDS_NOTICE = '1';
  console.warn('TEST_DATABASE_URL is not set: PostgreSQL/Redis suites are skipped (SQLite only).');
}
