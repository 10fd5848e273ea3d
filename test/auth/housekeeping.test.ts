import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  FIRST_SWEEP_WITHIN_MS,
  startHousekeeping,
  sweepExpired,
} from '../../src/auth/housekeeping.js';
import { databaseOutageLog } from '../../src/db/outage.js';
import type { Db } from '../../src/db/database.js';
import { backends } from '../helpers/backends.js';
import { capturedLog } from '../helpers/captured-log.js';
import { queueMail } from '../helpers/outbox.js';
import { TestApp } from '../helpers/test-app.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

describe.each(backends)('housekeeping ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const count = async (table: 'sessions' | 'one_time_codes', userId: string) =>
    (await t.db.selectFrom(table).select('user_id').where('user_id', '=', userId).execute()).length;

  it('deletes expired codes and sessions, and keeps live ones', async () => {
    const account = await t.register(); // one session, one confirmation code
    await t.codeFor(account.email); // issued when its e-mail is sent
    await sweepExpired(t.db, t.clock.now());
    expect(await count('sessions', account.userId)).toBe(1);
    expect(await count('one_time_codes', account.userId)).toBe(1);

    await sweepExpired(t.db, t.clock.now() + 11 * MINUTE); // the code has expired
    expect(await count('one_time_codes', account.userId)).toBe(0);
    expect(await count('sessions', account.userId)).toBe(1);

    await sweepExpired(t.db, t.clock.now() + 31 * 24 * 60 * MINUTE); // so has the session
    expect(await count('sessions', account.userId)).toBe(0);
  });

  it("runs in the app, its first sweep within the app's window", async () => {
    const account = await t.register();
    // A second instance on the same database, its clock a month on: the session has expired there.
    const later = await TestApp.start(t.backend, {
      overrides: { clock: () => Date.now() + 31 * DAY, housekeeping: { firstSweepWithinMs: 50 } },
    });
    try {
      await vi.waitFor(async () => expect(await count('sessions', account.userId)).toBe(0), {
        timeout: 5_000,
        interval: 50,
      });
    } finally {
      await later.close();
    }
  });

  it('deletes an e-mail that failed for good once it is a week old, and no other mail', async () => {
    const now = t.clock.now();
    const failed = (failedAt: number | null) =>
      queueMail(t.db, {
        recipient: `${randomUUID()}@example.com`,
        created_at: now - 8 * DAY,
        next_attempt_at: now + DAY,
        attempts: 1,
        last_error: failedAt === null ? null : '550 no such mailbox',
        failed_at: failedAt,
      });
    const ids = [await failed(now - 8 * DAY), await failed(now - 6 * DAY), await failed(null)];
    await sweepExpired(t.db, now);
    const left = await t.db.selectFrom('mail_outbox').select('id').where('id', 'in', ids).execute();
    expect(left.map((r) => r.id).sort()).toEqual([ids[1], ids[2]].sort());
  });

  it('keeps a failed e-mail for a whole week, and deletes it just after', async () => {
    const now = t.clock.now();
    const week = 7 * DAY;
    const failed = (failedAt: number) =>
      queueMail(t.db, {
        recipient: `${randomUUID()}@example.com`,
        created_at: failedAt,
        next_attempt_at: now + week,
        attempts: 1,
        last_error: '550 no such mailbox',
        failed_at: failedAt,
      });
    // A minute either side of the week: a retention off by more than that sweeps both or neither.
    const ids = [await failed(now - week + MINUTE), await failed(now - week - MINUTE)];
    await sweepExpired(t.db, now);
    const left = await t.db.selectFrom('mail_outbox').select('id').where('id', 'in', ids).execute();
    expect(left.map((r) => r.id)).toEqual([ids[0]]);
  });

  // The fifth try may be the right code, being consumed while a sweep runs; and the row holds the
  // 60 s rule for its address, which a deleted row would forget.
  it('keeps a burnt code (five tries taken) until it expires', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    for (let i = 0; i < 5; i++)
      await t.post('/api/confirm-email', { email: account.email, code: wrong });
    await sweepExpired(t.db, t.clock.now());
    expect(await count('one_time_codes', account.userId)).toBe(1);
    await sweepExpired(t.db, t.clock.now() + 11 * MINUTE);
    expect(await count('one_time_codes', account.userId)).toBe(0);
  });
});

/**
 * The schedule, with fake timers and a database that only records what is asked of it. Fake
 * timers are global: they run here, where no app is up, because an app's mail worker would lose
 * its timers to them (its next poll, and nodemailer's) and stop sending for the rest of the file.
 */
describe('housekeeping schedule', () => {
  const recordingDb = (tables: string[]) =>
    ({
      deleteFrom: (table: string) => {
        tables.push(table);
        throw new Error('recorded'); // the schedule is under test, not the sweep
      },
    }) as unknown as Db;

  it('sweeps within a minute of its start, not only after the first 10 minutes', async () => {
    const tables: string[] = [];
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'] });
    const log = pino({ level: 'silent' });
    const stop = startHousekeeping(
      recordingDb(tables),
      Date.now,
      log,
      databaseOutageLog(log, Date.now),
    );
    try {
      await vi.advanceTimersByTimeAsync(60_000); // "within a minute": not the constant itself
      expect(tables).toEqual(['sessions']);
    } finally {
      await stop();
      vi.useRealTimers();
    }
  });

  it('a sweep that finds the database away tells the outage log, not a warning with a stack', async () => {
    const { log, lines } = capturedLog();
    const away = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
    });
    const unreachable = {
      deleteFrom: () => {
        throw away;
      },
    } as unknown as Db;
    vi.useFakeTimers({ toFake: ['setTimeout', 'setInterval', 'clearTimeout', 'clearInterval'] });
    const stop = startHousekeeping(unreachable, Date.now, log, databaseOutageLog(log, Date.now));
    try {
      await vi.advanceTimersByTimeAsync(FIRST_SWEEP_WITHIN_MS);
    } finally {
      await stop();
      vi.useRealTimers();
    }
    expect(lines.some((line) => /housekeeping failed/.test(line))).toBe(false);
    expect(lines.filter((line) => /database is/.test(line))).toHaveLength(1);
  });
});
