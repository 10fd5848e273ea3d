// Ways a database can be away that are no bug of ours: each answers 503 (and is counted by the
// outage log) rather than 500 with a stack trace in the log.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql, type RawBuilder } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { isDatabaseUnavailable } from '../../src/db/outage.js';
import { inTransaction } from '../../src/db/transaction.js';
import type { Db } from '../../src/db/database.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl)
  console.warn('TEST_DATABASE_URL not set: skipping its part of test/db/outage-causes.');

/** The error `select 1` fails with on a fresh pool to `url`. */
async function failureOf(url: string): Promise<Error & { code?: string }> {
  const db = await openDatabase({ kind: 'postgres', url }, { poolSize: 1 });
  try {
    await sql`select 1`.execute(db);
  } catch (error) {
    return error as Error;
  } finally {
    await db.destroy();
  }
  throw new Error(`select 1 on ${url} answered`);
}

describe('a database that cannot be reached', () => {
  it('a host name that does not resolve (a DNS failure) is the database away', async () => {
    const error = await failureOf('postgres://app@database.invalid:5432/app');
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(error.code);
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});

describe('a SQLite file that takes no writes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outage-causes-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // Both pragmas are the connection's own: the real driver's errors, without filling a disk.
  it.each([
    ['SQLITE_FULL', sql`pragma max_page_count = 1`], // the file may not grow, as on a full disk
    ['SQLITE_READONLY', sql`pragma query_only = 1`], // as a file or file system made read-only
  ] satisfies [string, RawBuilder<unknown>][])('%s is the database away', async (code, refuse) => {
    const db = await openDatabase({ kind: 'sqlite', path: join(dir, `${code}.db`) });
    try {
      await sql`create table filler (bytes blob)`.execute(db);
      await refuse.execute(db);
      const insert = (into: Db) => sql`insert into filler values (zeroblob(100000))`.execute(into);
      // In a transaction too: SQLite rolls it back itself on SQLITE_FULL, and the ROLLBACK that
      // followed failed and hid the cause (500, not 503).
      for (const write of [() => insert(db), () => inTransaction(db, insert)]) {
        const error = await write().then(
          (): Error & { code?: string } => new Error('the insert succeeded'),
          (error: unknown) => error as Error & { code?: string },
        );
        expect(error.code).toBe(code);
        expect(isDatabaseUnavailable(error)).toBe(true);
      }
    } finally {
      await db.destroy();
    }
  });
});

describe("SQLite's extended result codes", () => {
  // better-sqlite3 gives the extended code: a file system turned read-only under the service
  // fails each write with SQLITE_IOERR_WRITE (test/db/sqlite-read-only-disk.test.ts), which was a
  // 500 with a stack per request.
  const failure = (code: string) => Object.assign(new Error('disk I/O error'), { code });

  it.each([
    'SQLITE_IOERR_WRITE',
    'SQLITE_IOERR_FSYNC',
    'SQLITE_IOERR_SHMOPEN',
    'SQLITE_READONLY_DBMOVED',
    'SQLITE_READONLY_RECOVERY',
    'SQLITE_BUSY_SNAPSHOT',
    'SQLITE_BUSY',
    'SQLITE_FULL',
  ])('%s is the database away', (code) => expect(isDatabaseUnavailable(failure(code))).toBe(true));

  it('a rejection that is no Error is no outage, and does not throw', () => {
    for (const thrown of [undefined, null, 'SQLITE_FULL', { code: 'SQLITE_FULL' }])
      expect(isDatabaseUnavailable(thrown)).toBe(false);
  });

  it.each(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CORRUPT', 'SQLITE_ERROR', 'SQLITE_IOERRS'])(
    '%s is not',
    (code) => expect(isDatabaseUnavailable(failure(code))).toBe(false),
  );
});

describe.skipIf(!adminUrl)('PostgreSQL refusing connections', () => {
  const role = `test_full_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  beforeAll(async () => {
    await admin.connect();
    // Every connection over its limit: as with more instances × pool size than max_connections.
    await admin.query(`create role ${role} login connection limit 0`);
  });
  afterAll(async () => {
    await admin.query(`drop role if exists ${role}`);
    await admin.end();
  });

  it('too many connections (53300) is the database away', async () => {
    const url = new URL(adminUrl!);
    url.username = role;
    const error = await failureOf(url.toString());
    expect(error.code).toBe('53300');
    expect(isDatabaseUnavailable(error)).toBe(true);
  });
});
