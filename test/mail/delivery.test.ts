import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/db/database.js';
import type { MailTransport } from '../../src/mail/transports.js';
import { createSecretBox } from '../../src/security/secret-box.js';
import { backends, type ProvisionedBackend } from '../helpers/backends.js';
import { queueMail, standaloneWorker } from '../helpers/outbox.js';
import { startRefusingSmtp, type RefusingSmtp } from '../helpers/refusing-smtp.js';
import { SmtpSink } from '../helpers/smtp-sink.js';
import { STRONG_PASSWORD, TestApp, randomIp, uniqueEmail } from '../helpers/test-app.js';

// API.md: "E-mails go through a durable outbox table and are delivered in the background with
// retries: a slow or failing mail server never slows or fails the HTTP request, and no message is
// lost across a restart."

const WAIT = { timeout: 15_000, interval: 50 };
const DAY = 24 * 60 * 60_000;

function outboxRow(db: Db, recipient: string) {
  return db
    .selectFrom('mail_outbox')
    .selectAll()
    .where('recipient', '=', recipient)
    .executeTakeFirst();
}

/** Waits for the outbox row of `recipient` to satisfy `check` (which asserts), and returns it. */
function waitForRow(
  db: Db,
  recipient: string,
  check: (row: NonNullable<Awaited<ReturnType<typeof outboxRow>>>) => void,
) {
  return vi.waitFor(async () => {
    const row = await outboxRow(db, recipient);
    expect(row).toBeDefined();
    check(row!);
    return row!;
  }, WAIT);
}

function register(t: TestApp, email: string) {
  return t.post('/api/register', { email, password: STRONG_PASSWORD }, { ip: randomIp() });
}

/** The harness always sets SMTP_URL from its sink; `undefined` here means "not set" to loadConfig. */
const WITHOUT_SMTP_URL = { SMTP_URL: undefined as unknown as string };

describe.each(backends)('mail delivery through the outbox ($name)', (backend) => {
  describe('a failing mail server', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await TestApp.start(backend);
    });
    afterAll(() => t.close());

    it('never fails the request: the mail waits in the outbox, is retried, and is delivered once the server is back', async () => {
      await t.smtp.stop();
      const email = uniqueEmail();
      const response = await register(t, email);
      expect(response.statusCode).toBe(201);

      const failed = await waitForRow(t.db, email, (row) => {
        expect(row.attempts).toBeGreaterThanOrEqual(1);
        expect(row.last_error).toBeTruthy();
        expect(row.failed_at).toBeNull();
      });
      const retried = await waitForRow(t.db, email, (row) => {
        expect(row.attempts).toBeGreaterThan(failed.attempts);
        expect(row.failed_at).toBeNull();
      });

      await t.smtp.listen(); // same port as before
      const mail = await t.smtp.waitFor(email);
      expect(mail.code).toMatch(/^\d{6}$/);
      await vi.waitFor(async () => expect(await outboxRow(t.db, email)).toBeUndefined(), WAIT);

      // No secret in the recorded errors, nor in clear in the stored message.
      for (const row of [failed, retried]) {
        expect(row.last_error).not.toContain(mail.code);
        expect(row.last_error).not.toContain(STRONG_PASSWORD);
        expect(row.sealed_body).not.toContain(mail.code);
      }
    });

    // README: queued e-mail bodies are AES-256-GCM sealed with a key derived from APP_SECRET, so
    // "a database backup alone does not give them away".
    it('keeps a queued body sealed at rest, and opens it again to send it', async () => {
      const account = await t.register();
      await t.smtp.waitFor(account.email, 1); // the confirmation e-mail is out of the way
      await t.smtp.stop();
      const changed = await t.post(
        '/api/change-password',
        { password: account.password, new_password: 'another-Quiet-harbour-93' },
        { token: account.accessToken },
      );
      expect(changed.statusCode).toBe(200);
      // Once the confirmation's row is gone, the notice's is the only one left for the address.
      const row = await waitForRow(t.db, account.email, (found) =>
        expect(found.subject).toBe('Your password was changed'),
      );
      expect(row.sealed_body).not.toMatch(/password|changed|signed out|http/i);

      await t.smtp.listen();
      const mail = await t.smtp.waitFor(account.email, 2, 20_000);
      expect(mail.raw).toMatch(/was just changed/);
    });
  });

  describe('a send that keeps failing', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await TestApp.start(backend);
    });
    afterAll(() => t.close());

    // As in claim-renewal.test.ts: the worker lives a day ahead of the app's clock, so the app's own
    // worker never finds this row due, and the worker's clock moves only when the test moves it.
    it('is retried after a delay that doubles per attempt, up to the maximum', async () => {
      const base = 1_000;
      const max = 4_000;
      let now = t.clock.now() + DAY;
      const box = createSecretBox(randomBytes(32));
      const id = await queueMail(t.db, {
        recipient: `${randomUUID()}@example.com`,
        subject: 'Hello',
        sealed_body: box.seal('text'),
        created_at: t.clock.now(),
        next_attempt_at: t.clock.now() + DAY / 2,
      });
      let sends = 0;
      const failing: MailTransport = {
        send: async () => {
          sends += 1;
          throw new Error('421 try again later');
        },
        close: () => undefined,
      };
      const worker = standaloneWorker({
        db: t.db,
        box,
        transport: failing,
        clock: () => now,
        timing: { pollIntervalMs: 20, baseBackoffMs: base, maxBackoffMs: max, claimMs: 60_000 },
      });
      worker.start();
      try {
        const delays: number[] = [];
        for (let attempt = 1; attempt <= 4; attempt++) {
          const failed = await vi.waitFor(
            async () => {
              const row = await t.db
                .selectFrom('mail_outbox')
                .select(['attempts', 'next_attempt_at', 'locked_until'])
                .where('id', '=', id)
                .executeTakeFirstOrThrow();
              expect(row.attempts).toBe(attempt);
              expect(row.locked_until).toBeNull(); // the failure is recorded
              return row;
            },
            { timeout: 5_000, interval: 10 },
          );
          delays.push(Number(failed.next_attempt_at) - now);
          now = Number(failed.next_attempt_at); // due again only now
        }
        expect(delays).toEqual([base, 2 * base, max, max]);
        expect(sends).toBe(4);
      } finally {
        await worker.stop();
        await t.db.deleteFrom('mail_outbox').where('id', '=', id).execute();
      }
    });
  });

  describe('a mail server that never answers', () => {
    let t: TestApp;
    let blackHole: Server;
    const sockets = new Set<Socket>();
    beforeAll(async () => {
      blackHole = createServer((socket) => {
        sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
      const { port } = blackHole.address() as { port: number };
      t = await TestApp.start(backend, { env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
    });
    afterAll(async () => {
      const closed = new Promise<void>((resolve) => blackHole.close(() => resolve()));
      for (const socket of sockets) socket.destroy(); // lets the pending send fail at once
      await closed;
      await t.close();
    });

    it('never slows the request: register answers 201 while the mail is still unsent', async () => {
      const email = uniqueEmail();
      const response = await register(t, email);
      expect(response.statusCode).toBe(201);
      // An attempt against this server can only end by a timeout of several seconds: an answered
      // request with no attempt finished shows the request did not wait for the send.
      const pending = await outboxRow(t.db, email);
      expect(pending).toMatchObject({ last_error: null, failed_at: null });

      // The background worker is indeed sending it (connected to the silent server) meanwhile.
      await vi.waitFor(() => expect(sockets.size).toBeGreaterThan(0), WAIT);
      expect(await outboxRow(t.db, email)).toMatchObject({ last_error: null, failed_at: null });
    });
  });

  describe('a restart', () => {
    let provisioned: ProvisionedBackend;
    let sink: SmtpSink;
    let first: TestApp | undefined;
    let second: TestApp | undefined;
    beforeAll(async () => {
      provisioned = await backend.provision();
      sink = await SmtpSink.start();
      await sink.stop(); // the port is known, nobody listens yet
    });
    afterAll(async () => {
      await first?.close();
      await second?.close();
      await provisioned.drop();
    });

    it('loses no message: a mail still pending when the service stops is delivered after the next start', async () => {
      first = await TestApp.start(provisioned, { smtp: sink });
      const account = await first.register();
      await waitForRow(first.db, account.email, (row) => expect(row.last_error).toBeTruthy());
      await first.close(); // does not drop the provisioned database
      first = undefined;

      await sink.listen();
      second = await TestApp.start(provisioned, { smtp: sink });
      // A message claimed just before the stop stays locked for the claim time (5 s in tests).
      const mail = await sink.waitFor(account.email, 1, 20_000);
      expect(mail.code).toMatch(/^\d{6}$/);
      // The code was hashed by the first instance: the same secret survived the restart.
      const confirmed = await second.post(
        '/api/confirm-email',
        { email: account.email, code: mail.code },
        { ip: randomIp() },
      );
      expect(confirmed.statusCode).toBe(200);
      await vi.waitFor(
        async () => expect(await outboxRow(second!.db, account.email)).toBeUndefined(),
        WAIT,
      );
    });
  });

  describe('an SMTP outage longer than a code lives', () => {
    let sink: SmtpSink;
    let t: TestApp | undefined;
    beforeAll(async () => {
      sink = await SmtpSink.start();
      await sink.stop(); // the port is known, nobody listens yet
    });
    afterAll(async () => {
      await t?.close();
      await sink.stop();
    });

    it('the registration e-mail, sent once the server is back, carries a code that works', async () => {
      t = await TestApp.start(backend, { smtp: sink });
      const account = await t.register();
      await waitForRow(t.db, account.email, (row) => expect(row.last_error).toBeTruthy());
      t.clock.advance(11 * 60_000); // a code lives 10 minutes
      await sink.listen();
      const mail = await sink.waitFor(account.email, 1, 20_000);
      const confirmed = await t.post(
        '/api/confirm-email',
        { email: account.email, code: mail.code },
        { ip: randomIp() },
      );
      expect(confirmed.statusCode, confirmed.body).toBe(200);
    });
  });

  describe('a permanent rejection (5xx)', () => {
    let t: TestApp;
    let smtp: RefusingSmtp;
    beforeAll(async () => {
      smtp = await startRefusingSmtp((address) =>
        address.startsWith('rejected.')
          ? { message: 'No such mailbox', responseCode: 550 }
          : undefined,
      );
      t = await TestApp.start(backend, { env: { SMTP_URL: smtp.url } });
    });
    afterAll(async () => {
      await t.close();
      await smtp.close();
    });

    it('marks the message failed (failed_at) and never retries it', async () => {
      const email = uniqueEmail('rejected');
      expect((await register(t, email)).statusCode).toBe(201);
      const failed = await waitForRow(t.db, email, (row) => expect(row.failed_at).not.toBeNull());
      expect(failed.attempts).toBe(1);
      expect(failed.last_error).toMatch(/550/);

      // Any retry would be long due now; a later mail proves the worker has run again since (it
      // takes due messages oldest first, so a retry would have come before this one).
      t.clock.advance(24 * 60 * 60_000);
      const other = uniqueEmail('accepted');
      expect((await register(t, other)).statusCode).toBe(201);
      await vi.waitFor(() => expect(smtp.delivered).toContain(other), WAIT);

      expect(smtp.recipients.filter((r) => r === email)).toHaveLength(1);
      expect(await outboxRow(t.db, email)).toMatchObject({
        attempts: 1,
        failed_at: failed.failed_at,
      });
    });
  });

  describe('without SMTP_URL (development fallback)', () => {
    let t: TestApp;
    const printed: string[] = [];
    beforeAll(async () => {
      t = await TestApp.start(backend, {
        env: WITHOUT_SMTP_URL,
        overrides: { consoleMail: (text) => printed.push(text) },
      });
    });
    afterAll(() => t.close());

    it('warns at start-up that e-mails, codes included, are printed (development only)', () => {
      const warnings = t.logs
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((entry) => entry.level === 40);
      expect(warnings.some((w) => /SMTP_URL/.test(w.msg) && /development/i.test(w.msg))).toBe(true);
    });

    it('prints the whole e-mail with its code instead of sending it', async () => {
      const account = await t.register();
      const mail = await vi.waitFor(() => {
        const found = printed.find((text) => text.includes(`To: ${account.email}`));
        expect(found).toBeDefined();
        return found!;
      }, WAIT);
      const code = /\b(\d{6})\b/.exec(mail.split('\n\n').slice(1).join('\n'))?.[1];
      expect(code).toBeDefined();
      const confirmed = await t.post(
        '/api/confirm-email',
        { email: account.email, code },
        { ip: randomIp() },
      );
      expect(confirmed.statusCode).toBe(200);
      expect(t.smtp.mails).toHaveLength(0);
      await vi.waitFor(
        async () => expect(await outboxRow(t.db, account.email)).toBeUndefined(),
        WAIT,
      );
    });
  });
});
