import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { CodePurpose, Database } from '../db/tables.js';
import type { SecretBox } from '../security/secret-box.js';
import type { MailMessage } from './messages.js';

/** A queued request for a code e-mail to `address`, made at `requestedAt`. */
export interface CodeRequest {
  readonly address: string;
  readonly purpose: CodePurpose;
  readonly requestedAt: number;
}

/**
 * Composes a message when it is sent; for a code request, this issues the code, or answers
 * undefined when the request lost its place to another (it is then dropped, unsent).
 */
export type ComposeMail = () => Promise<MailMessage | undefined>;

/** A code request as the worker finds it: `retry` once an attempt to send it was made. */
export interface QueuedCodeRequest extends CodeRequest {
  readonly retry: boolean;
}

/**
 * Decides a code request when the outbox worker reaches it: how to compose its e-mail, or
 * `undefined` when no account may get the code (the request is then dropped). Only reads: the
 * code is issued, or the request found superseded, when the e-mail is composed.
 */
export type PlanCodeMail = (request: QueuedCodeRequest) => Promise<ComposeMail | undefined>;

/**
 * Writes e-mails into the outbox table inside the caller's transaction: the mail exists exactly
 * when the change that caused it was committed. `mail/delivery.ts` sends it later.
 */
export interface Outbox {
  enqueue(trx: Kysely<Database>, message: MailMessage, now: number): Promise<void>;
  /**
   * Queues a code request: one row, the same work for any address, registered or not. The worker
   * looks the address up and issues the code when it sends the mail (`PlanCodeMail`).
   */
  requestCode(db: Kysely<Database>, request: CodeRequest): Promise<void>;
}

export function createOutbox(box: SecretBox, onEnqueued: () => void = () => undefined): Outbox {
  async function insert(
    db: Kysely<Database>,
    message: MailMessage,
    now: number,
    code?: CodePurpose,
  ) {
    await db
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
        code_purpose: code ?? null,
      })
      .execute();
    // A hint only: it may fire before the caller commits, so on PostgreSQL the worker may look too
    // early and find nothing; its next poll (1 s) then sends the message. Nothing is lost.
    onEnqueued();
  }
  return {
    enqueue: (trx, message, now) => insert(trx, message, now),
    requestCode: (db, { address, purpose, requestedAt }) =>
      insert(db, { to: address, subject: '', text: '' }, requestedAt, purpose),
  };
}

/**
 * How long a message the SMTP server refused for good stays in the outbox, for an operator to see
 * why (`last_error`); then it goes, with the address it held.
 */
const FAILED_MAIL_RETENTION_MS = 7 * 24 * 60 * 60_000;

/** Deletes the messages that failed for good more than `FAILED_MAIL_RETENTION_MS` before `now`. */
export async function deleteOldFailedMail(db: Kysely<Database>, now: number): Promise<void> {
  await db
    .deleteFrom('mail_outbox')
    .where('failed_at', '<', now - FAILED_MAIL_RETENTION_MS)
    .execute();
}
