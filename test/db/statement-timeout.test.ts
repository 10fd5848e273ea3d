// Who sets PostgreSQL's statement_timeout: the service, on each connection it opens (the server
// then cancels a statement at the client's own timeout), or, behind PgBouncer (which refuses that
// startup parameter), the database role.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase, serviceDatabaseOptions, type Db } from '../../src/db/database.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/db/statement-timeout.');

const statementTimeout = async (db: Db) =>
  (await sql<{ statement_timeout: string }>`show statement_timeout`.execute(db)).rows[0]
    ?.statement_timeout;

describe.skipIf(!adminUrl)('PostgreSQL statement_timeout', () => {
  const role = `test_timeout_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  const asRole = () => {
    const url = new URL(adminUrl!);
    url.username = role;
    return url.toString();
  };
  beforeAll(async () => {
    await admin.connect();
    await admin.query(`create role ${role} login`);
    await admin.query(`alter role ${role} set statement_timeout = '3s'`);
  });
  afterAll(async () => {
    await admin.query(`drop role if exists ${role}`);
    await admin.end();
  });

  it('is the query timeout on every connection the service opens, whatever the role says', async () => {
    const db = await openDatabase({ kind: 'postgres', url: asRole() }, { queryTimeoutMs: 7_000 });
    expect(await statementTimeout(db)).toBe('7s');
    await db.destroy();
  });

  it("is the role's own when the service does not set it (no startup parameter for PgBouncer to refuse)", async () => {
    const db = await openDatabase(
      { kind: 'postgres', url: asRole() },
      { statementTimeoutOnConnect: false },
    );
    expect(await statementTimeout(db)).toBe('3s');
    await db.destroy();
  });

  it('DATABASE_STATEMENT_TIMEOUT_SET_BY picks which (the service by default)', async () => {
    const configured = (env: Record<string, string>) =>
      serviceDatabaseOptions(
        loadConfig({ DATABASE_URL: asRole(), APP_SECRET: 'k'.repeat(32), ...env }),
      );
    const byService = await openDatabase({ kind: 'postgres', url: asRole() }, configured({}));
    const byRole = await openDatabase(
      { kind: 'postgres', url: asRole() },
      configured({ DATABASE_STATEMENT_TIMEOUT_SET_BY: 'role' }),
    );
    try {
      expect(await statementTimeout(byService)).toBe('10s');
      expect(await statementTimeout(byRole)).toBe('3s');
    } finally {
      await byService.destroy();
      await byRole.destroy();
    }
  });
});
