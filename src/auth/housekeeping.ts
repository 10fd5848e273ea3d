import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import { reportWorkerFailure } from '../db/outage.js';
import type { OutageLog } from '../outage-log.js';
import { deleteOldFailedMail } from '../mail/outbox.js';
import { deleteExpiredCodes } from './codes.store.js';
import { deleteExpiredSessions } from './sessions.store.js';

const INTERVAL_MS = 10 * 60_000;
/** The first sweep comes within this long of the start, at a random moment (see below). */
export const FIRST_SWEEP_WITHIN_MS = 60_000;

/**
 * Deletes expired sessions, expired codes (burnt ones too, once expired), and e-mails that failed for good a week ago.
 * The first two are already refused when read (every lookup checks expiry and tries); this only
 * keeps the tables small, and the addresses of failed mail from being kept for ever. Safe on every
 * instance.
 */
export async function sweepExpired(db: Db, now: number): Promise<void> {
  await deleteExpiredSessions(db, now);
  await deleteExpiredCodes(db, now);
  await deleteOldFailedMail(db, now);
}

/**
 * Runs `sweepExpired` soon after the start, then every 10 minutes; returns the function that
 * stops it. An instance restarted more often than every 10 minutes (deploys, autoscaling) would
 * otherwise never sweep; the first moment is random so that the instances of a rolling deploy do
 * not all sweep at once. Stopping waits for a sweep under way (the database is closed next).
 */
export function startHousekeeping(
  db: Db,
  clock: () => number,
  log: FastifyBaseLogger,
  databaseOutage: OutageLog,
  { firstSweepWithinMs } = { firstSweepWithinMs: FIRST_SWEEP_WITHIN_MS },
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= sweepExpired(db, clock())
      .catch((error: unknown) => {
        reportWorkerFailure(error, databaseOutage, log, 'housekeeping failed; will retry');
      })
      .finally(() => {
        running = undefined;
      });
  };
  let interval: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    sweep();
    interval = setInterval(sweep, INTERVAL_MS);
    interval.unref();
  }, Math.random() * firstSweepWithinMs);
  first.unref();
  return async () => {
    clearTimeout(first);
    clearInterval(interval);
    await running;
  };
}
