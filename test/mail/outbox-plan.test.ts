import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { dueMailsQuery } from '../../src/mail/delivery.js';
import { createPostgresDatabase } from '../helpers/backends.js';
import { queryPlan } from '../helpers/query-plan.js';

const adminUrl = process.env.TEST_DATABASE_URL;
if (!adminUrl) console.warn('TEST_DATABASE_URL not set: skipping test/mail/outbox-plan.');

const FAILED = 5_000;

/** SQLite's plan names the same index either way; PostgreSQL's shows what it reads past. */
describe.skipIf(!adminUrl)('the outbox poll on PostgreSQL', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Db;
  beforeAll(async () => {
    database = await createPostgresDatabase(adminUrl!);
    const location = { kind: 'postgres' as const, url: database.url };
    db = await openDatabase(location);
    await migrate(location, db);
    // A week of mails failed for good, due long ago, and a few mails due now.
    await sql`insert into mail_outbox (id, recipient, subject, sealed_body, attempts,
        next_attempt_at, failed_at, created_at)
      select gen_random_uuid()::text, 'x@example.test', 's', 'b', 5, n, n, n
      from generate_series(1, ${FAILED}) as n`.execute(db);
    await sql`insert into mail_outbox (id, recipient, subject, sealed_body, attempts,
        next_attempt_at, created_at)
      select gen_random_uuid()::text, 'y@example.test', 's', 'b', 0, 1000000 + n, 1000000 + n
      from generate_series(1, 3) as n`.execute(db);
    await sql`analyze mail_outbox`.execute(db);
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  it('reads the index of mails not failed, not past the failed ones', async () => {
    const plan = await queryPlan(db, dueMailsQuery(db, 2_000_000));
    expect(plan).toMatch(/mail_outbox_due/);
    expect(plan).not.toMatch(/Seq Scan|Filter: .*failed_at IS NULL/);
    expect(await dueMailsQuery(db, 2_000_000).execute()).toHaveLength(3);
  });
});
