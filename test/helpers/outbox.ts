import { randomUUID } from 'node:crypto';
import type { Insertable } from 'kysely';
import type { Db } from '../../src/db/database.js';
import type { MailOutboxTable } from '../../src/db/tables.js';

/**
 * Puts a row into the mail outbox as the worker would find it, for tests that need one the service
 * would not write on its own (queued long ago, failed for good, a code request from before the
 * account): due at `created_at`, never tried, unless `row` says otherwise. Answers its id.
 */
export async function queueMail(
  db: Db,
  row: Pick<Insertable<MailOutboxTable>, 'recipient' | 'created_at'> &
    Partial<Insertable<MailOutboxTable>>,
): Promise<string> {
  const id = row.id ?? randomUUID();
  await db
    .insertInto('mail_outbox')
    .values({
      subject: '',
      sealed_body: '',
      attempts: 0,
      next_attempt_at: row.created_at,
      locked_until: null,
      last_error: null,
      failed_at: null,
      code_purpose: null,
      ...row,
      id,
    })
    .execute();
  return id;
}
