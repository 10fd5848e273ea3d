import { randomUUID } from 'node:crypto';
import type { Insertable } from 'kysely';
import { pino } from 'pino';
import type { Db } from '../../src/db/database.js';
import type { MailOutboxTable } from '../../src/db/tables.js';
import { MailDelivery, type DeliveryTiming } from '../../src/mail/delivery.js';
import type { MailTransport } from '../../src/mail/transports.js';
import { OutageLog } from '../../src/outage-log.js';
import type { SecretBox } from '../../src/security/secret-box.js';

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

/**
 * An outbox worker of its own, beside the app's (another instance, as it were): plain messages
 * only (no code requests), silent, with the test's clock, box and timing.
 */
export function standaloneWorker(options: {
  db: Db;
  box: SecretBox;
  transport: MailTransport;
  clock: () => number;
  timing: DeliveryTiming;
}): MailDelivery {
  const log = pino({ level: 'silent' });
  return new MailDelivery({
    ...options,
    log,
    planCodeMail: async () => undefined,
    databaseOutage: new OutageLog({ dependency: 'database', meanwhile: '', counted: String, log }),
  });
}
