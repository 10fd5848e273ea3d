import type { FastifyBaseLogger } from 'fastify';
import type { Selectable } from 'kysely';
import type { Db } from '../db/database.js';
import { reportWorkerFailure } from '../db/outage.js';
import type { MailOutboxTable } from '../db/tables.js';
import type { OutageLog } from '../outage-log.js';
import type { SecretBox } from '../security/secret-box.js';
import type { ComposeMail, PlanCodeMail } from './outbox.js';
import { PermanentMailError, type MailTransport } from './transports.js';

export interface DeliveryTiming {
  /** How often the outbox is polled when nothing wakes the worker (other instances' mail, retries). */
  readonly pollIntervalMs: number;
  /** First retry delay; doubles per attempt up to `maxBackoffMs`. */
  readonly baseBackoffMs: number;
  readonly maxBackoffMs: number;
  /**
   * A claimed message is not claimed again (by this or another instance) before this has passed.
   * The claim is renewed every third of it while its send lasts (an SMTP server may answer each
   * command just inside the socket timeout), so it runs out only when its instance is gone.
   */
  readonly claimMs: number;
}

export const DEFAULT_DELIVERY_TIMING: DeliveryTiming = {
  pollIntervalMs: 1_000,
  baseBackoffMs: 5_000,
  maxBackoffMs: 15 * 60_000,
  claimMs: 60_000,
};

/**
 * How long a message may wait in the outbox before a failed send gives it up (marks it failed,
 * kept a week for an operator, then swept with its address) instead of retrying it: as an MTA
 * bounces a message it could not deliver in days (Postfix: 5), rather than retrying a full
 * mailbox or a refusing relay for ever. A code request sooner: a code asked for a day ago is
 * asked for again, if at all, and each retry would issue a new one.
 */
const QUEUE_LIFETIME_MS = 5 * 24 * 60 * 60_000;
const CODE_QUEUE_LIFETIME_MS = 24 * 60 * 60_000;

/** How long stopping waits for a send under way. */
const STOP_WAIT_MS = 2_000;

/** Messages found due per pass. */
export const BATCH_SIZE = 20;

interface Options {
  readonly db: Db;
  readonly box: SecretBox;
  readonly transport: MailTransport;
  readonly log: FastifyBaseLogger;
  readonly clock: () => number;
  readonly timing: DeliveryTiming;
  /** Decides queued code requests (see outbox.ts). */
  readonly planCodeMail: PlanCodeMail;
  /** Where a pass that failed because the database is away is reported, instead of a stack a second. */
  readonly databaseOutage: OutageLog;
}

const QUEUED_COLUMNS = [
  'id',
  'recipient',
  'subject',
  'sealed_body',
  'attempts',
  'code_purpose',
  'created_at',
] as const;
type QueuedMessage = Pick<Selectable<MailOutboxTable>, (typeof QUEUED_COLUMNS)[number]>;

/**
 * Drains the outbox in the background: claims due messages, sends them, deletes what was sent and
 * reschedules what failed with exponential backoff. Runs in every instance; claims keep two
 * instances from sending the same message.
 */
export class MailDelivery {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private wakeRequested = false;
  /** Messages sent whose row could not be deleted yet (see `deliver`). */
  private readonly sentNotDeleted = new Set<string>();

  constructor(private readonly options: Options) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Asks for a pass now (a message was just enqueued) instead of at the next poll. */
  wake(): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.wakeRequested = true;
      return;
    }
    this.schedule(0);
  }

  /**
   * Stops polling and waits for the send under way, at most STOP_WAIT_MS: an SMTP server that
   * answers slowly (each command may take up to the 20 s socket timeout) must not hold the
   * shutdown. A send left running keeps its claim; if the process ends first, the message is
   * sent again once the claim runs out (possibly twice, as after a crash).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, STOP_WAIT_MS);
    });
    await Promise.race([this.running, waited]);
    clearTimeout(timer);
    this.options.transport.close();
  }

  async pendingCount(): Promise<number> {
    const row = await this.options.db
      .selectFrom('mail_outbox')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('failed_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.running = this.pass().then((moreDue) => {
        this.running = undefined;
        if (this.stopped) return;
        const again = this.wakeRequested || moreDue;
        this.wakeRequested = false;
        this.schedule(again ? 0 : this.options.timing.pollIntervalMs);
      });
    }, delayMs);
    this.timer.unref();
  }

  /**
   * One batch of due messages. Answers whether more may be due: a full batch was handled (each
   * message sent, dropped, put off or taken by another instance: none is found due again), so a
   * backlog drains batch after batch instead of one batch per poll (20 a second).
   */
  private async pass(): Promise<boolean> {
    try {
      await this.forgetSent();
      const due = await this.findDue();
      for (const message of due) {
        if (this.stopped) break;
        if (this.sentNotDeleted.has(message.id)) {
          await this.forget(message.id);
          continue;
        }
        const compose = await this.plan(message);
        // Dropped unclaimed: dropping twice is harmless, and floods of unknown addresses take this
        // path, so it costs one lookup and one write (a claim would add a write).
        if (compose === undefined) await this.drop(message);
        // Claimed one at a time, just before sending: a claim only has to outlast one send.
        else if (await this.claim(message))
          await this.deliver({ ...message, attempts: message.attempts + 1 }, compose);
      }
      return due.length === BATCH_SIZE;
    } catch (error) {
      this.reportFailedPass(error);
      return false;
    }
  }
  private reportFailedPass(error: unknown): void {
    const { databaseOutage, log } = this.options;
    reportWorkerFailure(error, databaseOutage, log, 'mail outbox pass failed; will retry');
  }

  private findDue() {
    return dueMailsQuery(this.options.db, this.options.clock()).execute();
  }

  /** Compare-and-set on the attempt count: of two instances, one wins the message. */
  private async claim(message: { id: string; attempts: number }): Promise<boolean> {
    const { db, clock, timing } = this.options;
    const result = await db
      .updateTable('mail_outbox')
      .set({ locked_until: clock() + timing.claimMs, attempts: message.attempts + 1 })
      .where('id', '=', message.id)
      .where('attempts', '=', message.attempts)
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /**
   * How to compose the message: open the stored one, or for a code request, issue its code when it
   * is sent (so a retry issues a new code, voiding the one of the failed send); `undefined` drops it.
   */
  private async plan(message: QueuedMessage): Promise<ComposeMail | undefined> {
    const { box, planCodeMail } = this.options;
    const { recipient, subject, sealed_body, code_purpose, created_at, attempts } = message;
    if (code_purpose === null)
      return async () => ({ to: recipient, subject, text: box.open(sealed_body) });
    return planCodeMail({
      address: recipient,
      purpose: code_purpose,
      requestedAt: created_at,
      retry: attempts > 0,
    });
  }

  /** Deletes the message unless another instance claimed it meanwhile. */
  private async drop(message: QueuedMessage): Promise<void> {
    await this.options.db
      .deleteFrom('mail_outbox')
      .where('id', '=', message.id)
      .where('attempts', '=', message.attempts)
      .execute();
    this.options.log.debug({ mailId: message.id }, 'code request dropped');
  }

  private async deliver(message: QueuedMessage, compose: ComposeMail) {
    const { transport, log } = this.options;
    const renewal = this.keepClaimed(message);
    try {
      const mail = await compose();
      if (mail === undefined) {
        clearInterval(renewal);
        return await this.drop(message);
      }
      await transport.send(mail);
    } catch (error) {
      clearInterval(renewal);
      await this.recordFailure(message, error);
      return;
    }
    clearInterval(renewal);
    log.info({ mailId: message.id, attempts: message.attempts }, 'e-mail delivered');
    // Sent: a failure from here on must not send it again (a code e-mail would get a new code,
    // voiding the one just delivered). A row that cannot be deleted now is deleted at the next
    // pass (forgetSent), and is never sent again by this instance.
    this.sentNotDeleted.add(message.id);
    await this.forget(message.id).catch((error: unknown) =>
      log.warn({ err: error, mailId: message.id }, 'e-mail delivered; its outbox row goes later'),
    );
  }

  /** Renews the claim of a message being sent (its attempt count is the claim's), until cleared. */
  private keepClaimed(message: QueuedMessage): NodeJS.Timeout {
    const { db, clock, timing, log } = this.options;
    const timer = setInterval(() => {
      db.updateTable('mail_outbox')
        .set({ locked_until: clock() + timing.claimMs })
        .where('id', '=', message.id)
        .where('attempts', '=', message.attempts)
        .execute()
        .catch((error: unknown) =>
          log.warn({ err: error, mailId: message.id }, 'mail claim not renewed'),
        );
    }, timing.claimMs / 3);
    timer.unref();
    return timer;
  }

  /**
   * Deletes the rows of messages sent whose deletion failed, at every pass, while their claims
   * (renewed until the send ended, then good for `claimMs`) still keep other instances off them:
   * waiting until they are due again would let every other instance find them due at the same
   * moment, and send them again.
   */
  private async forgetSent(): Promise<void> {
    for (const id of [...this.sentNotDeleted]) await this.forget(id);
  }

  private async forget(id: string): Promise<void> {
    await this.options.db.deleteFrom('mail_outbox').where('id', '=', id).execute();
    this.sentNotDeleted.delete(id);
  }

  /**
   * Records a failed send: a permanent refusal, or any failure once the message outlived its time
   * in the queue, marks it failed; anything else is retried with backoff. Unless another instance
   * claimed the message meanwhile (this one's claim ran out: a stall): clearing that claim would
   * let a third instance send it while it does.
   */
  private async recordFailure(message: QueuedMessage, error: unknown) {
    const { db, log, clock, timing } = this.options;
    const reason = error instanceof Error ? error.message.slice(0, 500) : 'unknown error';
    const now = clock();
    const takenOver = () =>
      log.warn(
        { mailId: message.id, reason },
        'e-mail delivery failed after another instance took the message over; it goes on there',
      );
    const permanent = error instanceof PermanentMailError;
    if (permanent || now - message.created_at >= queueLifetimeOf(message)) {
      const { numUpdatedRows } = await db
        .updateTable('mail_outbox')
        .set({ failed_at: now, last_error: reason, locked_until: null })
        .where('id', '=', message.id)
        .where('attempts', '=', message.attempts)
        .executeTakeFirst();
      if (numUpdatedRows === 0n) return takenOver();
      log.error(
        { mailId: message.id, attempts: message.attempts, reason },
        permanent
          ? 'e-mail refused permanently by the SMTP server; not retrying'
          : 'e-mail not delivered within its time in the queue; given up',
      );
      return;
    }
    const delay = Math.min(timing.baseBackoffMs * 2 ** (message.attempts - 1), timing.maxBackoffMs);
    const { numUpdatedRows } = await db
      .updateTable('mail_outbox')
      .set({ next_attempt_at: now + delay, last_error: reason, locked_until: null })
      .where('id', '=', message.id)
      .where('attempts', '=', message.attempts)
      .executeTakeFirst();
    if (numUpdatedRows === 0n) return takenOver();
    log.warn(
      { mailId: message.id, attempts: message.attempts, retryInMs: delay, reason },
      'e-mail delivery failed; will retry',
    );
  }
}

const queueLifetimeOf = (message: QueuedMessage) =>
  message.code_purpose === null ? QUEUE_LIFETIME_MS : CODE_QUEUE_LIFETIME_MS;

/**
 * The next batch of mails to send: due, not failed for good, not claimed by a live send. Read by
 * the partial index of the mails not failed (migration 009), which the failed ones, kept a week,
 * do not fill.
 */
export function dueMailsQuery(db: Db, now: number) {
  return db
    .selectFrom('mail_outbox')
    .select(QUEUED_COLUMNS)
    .where('failed_at', 'is', null)
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(BATCH_SIZE);
}
