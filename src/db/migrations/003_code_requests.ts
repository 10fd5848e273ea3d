import type { Kysely } from 'kysely';

export const CODE_TRY_DECOY_BUCKETS = 256;

/**
 * Code e-mails are composed by the outbox worker, which issues the code when it sends the mail:
 * a request only queues one row, the same for every address (`mail_outbox.code_purpose`).
 * A guess that finds no live code takes a "try" on a decoy row instead (`code_try_decoys`), so
 * every guess commits exactly one changed row, registered address or not.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mail_outbox').addColumn('code_purpose', 'varchar(32)').execute();
  await db.schema
    .createTable('code_try_decoys')
    .addColumn('bucket', 'integer', (c) => c.primaryKey())
    .addColumn('tries', 'bigint', (c) => c.notNull())
    .execute();
  const rows = Array.from({ length: CODE_TRY_DECOY_BUCKETS }, (_, bucket) => ({
    bucket,
    tries: 0,
  }));
  await db
    .withTables<{ code_try_decoys: { bucket: number; tries: number } }>()
    .insertInto('code_try_decoys')
    .values(rows)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('code_try_decoys').execute();
  await db.schema.alterTable('mail_outbox').dropColumn('code_purpose').execute();
}
