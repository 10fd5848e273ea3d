import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BATCH_SIZE } from '../../src/mail/delivery.js';
import { createSecretBox, type SecretBox } from '../../src/security/secret-box.js';
import { backends } from '../helpers/backends.js';
import { queueMail, standaloneWorker } from '../helpers/outbox.js';
import { TestApp } from '../helpers/test-app.js';

const DAY = 24 * 60 * 60_000;

// After an SMTP outage or a stop, the outbox holds a backlog: it must go out batch after batch,
// not one batch of 20 per poll (10,000 mails would take over 8 minutes, codes expiring meanwhile).

describe.each(backends)('a mail backlog ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  /** A worker living at `now` whose transport only records each recipient, in sending order. */
  function recordingWorker(box: SecretBox, now: number, pollIntervalMs: number) {
    const sent: string[] = [];
    const worker = standaloneWorker({
      db: t.db,
      box,
      transport: { send: async (message) => void sent.push(message.to), close: () => undefined },
      clock: () => now,
      timing: { pollIntervalMs, baseBackoffMs: 1_000, maxBackoffMs: 1_000, claimMs: 60_000 },
    });
    return { worker, sent };
  }

  it('drains without waiting a poll between full batches', async () => {
    // A day ahead of the app's clock: the app's own worker never finds these rows due.
    const now = t.clock.now() + DAY;
    const box = createSecretBox(randomBytes(32));
    const count = 3 * BATCH_SIZE + 5;
    const recipients = new Set<string>();
    for (let i = 0; i < count; i++) {
      const recipient = `${randomUUID()}@example.com`;
      recipients.add(recipient);
      await queueMail(t.db, {
        recipient,
        subject: 'Hello',
        sealed_body: box.seal('text'),
        created_at: t.clock.now(),
        next_attempt_at: t.clock.now() + DAY / 2,
      });
    }
    // Polling far less often than the test waits: only the batches' own chaining sends them all.
    const { worker, sent } = recordingWorker(box, now, 10 * 60_000);
    worker.start();
    try {
      await vi.waitFor(() => expect(sent).toHaveLength(count), { timeout: 20_000, interval: 50 });
      expect(new Set(sent)).toEqual(recipients);
      expect(await worker.pendingCount()).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  // delivery.test.ts relies on it ("it takes due messages oldest first"), and notices and codes
  // reach a mailbox in the order they were asked for.
  it('goes out in the order its mails became due', async () => {
    const queuedAt = t.clock.now();
    const now = queuedAt + DAY;
    const box = createSecretBox(randomBytes(32));
    const recipients: string[] = [];
    // Queued latest first: the order of the rows in the table is not the order to send them in.
    for (let i = 4; i >= 0; i--) {
      const recipient = `${i}-${randomUUID()}@example.com`;
      recipients.unshift(recipient);
      await queueMail(t.db, {
        recipient,
        subject: 'Hello',
        sealed_body: box.seal('text'),
        created_at: queuedAt + i,
        next_attempt_at: queuedAt + DAY / 2 + i,
      });
    }
    const { worker, sent } = recordingWorker(box, now, 20);
    worker.start();
    try {
      // Only these five: a row an earlier test left behind may go out among them.
      const ours = () => sent.filter((recipient) => recipients.includes(recipient));
      await vi.waitFor(() => expect(ours()).toHaveLength(5), { timeout: 5_000, interval: 10 });
      expect(ours()).toEqual(recipients);
    } finally {
      await worker.stop();
    }
  });
});
