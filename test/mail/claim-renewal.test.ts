import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MailTransport } from '../../src/mail/transports.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { backends } from '../helpers/backends.js';
import { queueMail, standaloneWorker } from '../helpers/outbox.js';
import { TestApp } from '../helpers/test-app.js';

const DAY = 24 * 60 * 60_000;
const CLAIM_MS = 600;

// A send that outlasts the claim (an SMTP server answering each command just inside its socket
// timeout) must not let another instance claim the message and send it a second time.

describe.each(backends)('a mail claim held through a slow send ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  // The workers live a day ahead of the app's clock, so the app's own worker never finds the row
  // due. Their clock stands still but for the steps the test takes: a claim runs out only when the
  // test moves time past it, not because this machine ran a renewal late.
  let now = 0;
  const clock = () => now;
  const box = createSecretBox(randomBytes(32));

  function worker(transport: MailTransport) {
    const timing = {
      pollIntervalMs: 20,
      baseBackoffMs: 1_000,
      maxBackoffMs: 1_000,
      claimMs: CLAIM_MS,
    };
    return standaloneWorker({ db: t.db, box, transport, clock, timing });
  }

  /** A message due for the workers (a day ahead), never for the app's own worker. */
  function queueForWorkers(): Promise<string> {
    now = t.clock.now() + DAY;
    return queueMail(t.db, {
      recipient: `${randomUUID()}@example.com`,
      subject: 'Hello',
      sealed_body: box.seal('text'),
      created_at: t.clock.now(),
      next_attempt_at: t.clock.now() + DAY / 2,
    });
  }

  it('is renewed while the send lasts, so no other instance sends the message', async () => {
    const id = await queueForWorkers();
    let finishSlowSend!: () => void;
    const slowSends: string[] = [];
    const slow = worker({
      send: (message) => {
        slowSends.push(message.to);
        return new Promise<void>((resolve) => (finishSlowSend = resolve));
      },
      close: () => undefined,
    });
    const otherSends: string[] = [];
    const other = worker({
      send: async (message) => void otherSends.push(message.to),
      close: () => undefined,
    });
    slow.start();
    await vi.waitFor(() => expect(slowSends).toHaveLength(1), { timeout: 5_000, interval: 10 });
    other.start();
    const lockedUntil = async () =>
      Number(
        (
          await t.db
            .selectFrom('mail_outbox')
            .select('locked_until')
            .where('id', '=', id)
            .executeTakeFirstOrThrow()
        ).locked_until,
      );
    // Four claims' time, half a claim at a step. Before each step, a renewal made at the current
    // time must land (the claim itself, at first), so the claim outlasts the step: the other
    // instance, polling meanwhile, must not take the message.
    for (let step = 0; step < 8; step++) {
      const renewedTo = now + CLAIM_MS;
      await vi.waitFor(async () => expect(await lockedUntil()).toBeGreaterThanOrEqual(renewedTo), {
        timeout: 5_000,
        interval: 10,
      });
      now += CLAIM_MS / 2;
      await new Promise((resolve) => setTimeout(resolve, 60)); // the other instance polls (20 ms)
    }
    expect(otherSends).toEqual([]);

    finishSlowSend();
    await vi.waitFor(
      async () => {
        const row = await t.db
          .selectFrom('mail_outbox')
          .select('id')
          .where('id', '=', id)
          .executeTakeFirst();
        expect(row).toBeUndefined();
      },
      { timeout: 5_000, interval: 20 },
    );
    await Promise.all([slow.stop(), other.stop()]);
    expect([slowSends.length, otherSends.length]).toEqual([1, 0]);
  });

  it('a send that fails after another instance took the message over leaves that claim alone', async () => {
    const id = await queueForWorkers();
    let failSend!: (error: Error) => void;
    const stalled = worker({
      send: () => new Promise<void>((_resolve, reject) => (failSend = reject)),
      close: () => undefined,
    });
    stalled.start();
    await vi.waitFor(() => expect(failSend).toBeDefined(), { timeout: 5_000, interval: 10 });
    // This instance stalled past its claim; another claimed the message (as its claim does).
    const takenOver = { attempts: 2, locked_until: now + DAY };
    await t.db.updateTable('mail_outbox').set(takenOver).where('id', '=', id).execute();
    failSend(new Error('connection reset'));
    await stalled.stop();
    const row = await t.db
      .selectFrom('mail_outbox')
      .select(['attempts', 'locked_until', 'last_error'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect({ ...row, locked_until: Number(row.locked_until) }).toEqual({
      ...takenOver,
      last_error: null,
    });
  });
});
