import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../db/tables.js';
import type { SecretBox } from '../security/secret-box.js';
import type { MailMessage } from './messages.js';

/**
 * Writes e-mails into the outbox table inside the caller's transaction: the mail exists exactly
 * when the change that caused it was committed. `mail/delivery.ts` sends it later.
 */
export interface Outbox {
  enqueue(trx: Kysely<Database>, message: MailMessage, now: number): Promise<void>;
}

export function createOutbox(box: SecretBox, onEnqueued: () => void = () => undefined): Outbox {
  return {
    async enqueue(trx, message, now) {
      await trx
        .insertInto('mail_outbox')
        .values({
          id: randomUUID(),
          recipient: message.to,
          subject: message.subject,
          sealed_body: box.seal(message.text),
          attempts: 0,
          next_attempt_at: now,
          locked_until: null,
          last_error: null,
          failed_at: null,
          created_at: now,
        })
        .execute();
      // A hint only: it fires before the caller commits, so on PostgreSQL the worker may look too
      // early and find nothing; its next poll (1 s) then sends the message. Nothing is lost.
      onEnqueued();
    },
  };
}
