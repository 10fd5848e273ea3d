import { sql, type Kysely } from 'kysely';

/**
 * The outbox is polled every second on every instance for the mails due, among those not failed
 * for good; failed ones are kept a week, at the start of the due index, and each poll read past
 * them all (a sequential scan on PostgreSQL at 50,000 of them). The index now holds only the mails
 * not failed: what the poll and the pending-mail gauge read.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('mail_outbox_due').execute();
  await db.schema
    .createIndex('mail_outbox_due')
    .on('mail_outbox')
    .column('next_attempt_at')
    .where(sql.ref('failed_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('mail_outbox_due').execute();
  await db.schema
    .createIndex('mail_outbox_due')
    .on('mail_outbox')
    .column('next_attempt_at')
    .execute();
}
