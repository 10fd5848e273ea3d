// The benchmark's own database: a fresh SQLite file in a temporary directory by default, or, when
// BENCH_DATABASE_URL (an admin URL) is set, a fresh PostgreSQL database that is dropped afterwards.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * @typedef {object} BenchDatabase
 * @property {'sqlite' | 'postgres'} kind
 * @property {string} url          DATABASE_URL for the service
 * @property {Record<string, string>} env  extra environment for the service (APP_SECRET)
 * @property {string} workDir      a scratch directory for the run (loop-monitor file, logs)
 * @property {() => Promise<void>} drop
 */

/**
 * @param {string | undefined} adminUrl  BENCH_DATABASE_URL
 * @returns {Promise<BenchDatabase>}
 */
export async function createBenchDatabase(adminUrl) {
  const workDir = await mkdtemp(join(tmpdir(), 'account-bench-'));
  const removeWorkDir = () => rm(workDir, { recursive: true, force: true });
  if (!adminUrl) {
    return {
      kind: 'sqlite',
      url: `sqlite:${join(workDir, 'auth.db')}`,
      env: {},
      workDir,
      drop: removeWorkDir,
    };
  }

  const name = `bench_${Date.now()}_${randomBytes(3).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    kind: 'postgres',
    url: url.toString(),
    env: { APP_SECRET: randomBytes(32).toString('base64url') },
    workDir,
    async drop() {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await removeWorkDir();
    },
  };
}

/** @param {string} adminUrl @param {string} statement */
async function adminQuery(adminUrl, statement) {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** The database URL without its password, for the report. @param {string} url */
export function describeDatabase(url) {
  if (url.startsWith('sqlite:')) return 'SQLite (fresh file in a temporary directory)';
  const parsed = new URL(url);
  return `PostgreSQL ${parsed.host} (fresh database ${parsed.pathname.slice(1)}, dropped after)`;
}
