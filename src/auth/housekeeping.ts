import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import { deleteOldFailedMail } from '../mail/outbox.js';
import { CODE_MAX_TRIES } from '../security/one-time-codes.js';
import { deleteDeadCodes } from './codes.store.js';
import { deleteExpiredSessions } from './sessions.store.js';

const INTERVAL_MS = 10 * 60_000;

/**
 * Deletes expired sessions, expired or burnt codes, and e-mails that failed for good a week ago.
 * The first two are already refused when read (every lookup checks expiry and tries); this only
 * keeps the tables small, and the addresses of failed mail from being kept for ever. Safe on every
 * instance.
 */
export async function sweepExpired(db: Db, now: number): Promise<void> {
  await deleteExpiredSessions(db, now);
  await deleteDeadCodes(db, now, CODE_MAX_TRIES);
  await deleteOldFailedMail(db, now);
}

/** Runs `sweepExpired` every 10 minutes; returns the function that stops it. */
export function startHousekeeping(db: Db, clock: () => number, log: FastifyBaseLogger): () => void {
  const timer = setInterval(() => {
    sweepExpired(db, clock()).catch((error: unknown) => {
      log.warn({ err: error }, 'housekeeping failed; will retry');
    });
  }, INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
