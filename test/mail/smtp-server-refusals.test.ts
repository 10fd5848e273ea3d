import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends } from '../helpers/backends.js';
import { STRONG_PASSWORD, TestApp, randomIp, uniqueEmail } from '../helpers/test-app.js';

// API.md: "E-mails go through a durable outbox table and are delivered in the background with
// retries: a slow or failing mail server never slows or fails the HTTP request, and no message is
// lost across a restart."
//
// A 5xx that is about the server/session (AUTH refused, 554 greeting), not about the message or
// its recipient, must be retried: once the server (or its credentials) is fixed the mail goes out.

const WAIT = { timeout: 15_000, interval: 50 };

describe.each(backends.slice(0, 1))('SMTP server-level 5xx ($name)', (backend) => {
  let t: TestApp;
  let server: SMTPServer;
  let authWorks = false;
  const delivered: string[] = [];
  beforeAll(async () => {
    server = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth(auth, _session, callback) {
        // e.g. the provider's auth backend is down for a minute, or credentials being rotated
        if (!authWorks)
          return callback(
            Object.assign(new Error('Authentication temporarily broken'), { responseCode: 535 }),
          );
        callback(null, { user: auth.username });
      },
      onData(stream, session, callback) {
        stream.resume();
        stream.on('end', () => {
          delivered.push(...session.envelope.rcptTo.map((r) => r.address));
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.server.address() as { port: number };
    t = await TestApp.start(backend, { env: { SMTP_URL: `smtp://u:p@127.0.0.1:${port}` } });
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a registration e-mail refused by a transient AUTH failure is retried once the server is fixed', async () => {
    const email = uniqueEmail();
    const r = await t.post(
      '/api/register',
      { email, password: STRONG_PASSWORD },
      { ip: randomIp() },
    );
    expect(r.statusCode).toBe(201);
    await vi.waitFor(async () => {
      const row = await t.db
        .selectFrom('mail_outbox')
        .selectAll()
        .where('recipient', '=', email)
        .executeTakeFirst();
      expect(row?.attempts).toBeGreaterThanOrEqual(1);
      expect(row?.last_error ?? row?.failed_at).toBeTruthy();
    }, WAIT);

    authWorks = true; // the mail server is fine again
    t.clock.advance(60 * 60_000); // any backoff is long over
    const other = uniqueEmail();
    await t.post('/api/register', { email: other, password: STRONG_PASSWORD }, { ip: randomIp() });
    await vi.waitFor(() => expect(delivered).toContain(other), WAIT); // the worker runs again

    const row = await t.db
      .selectFrom('mail_outbox')
      .selectAll()
      .where('recipient', '=', email)
      .executeTakeFirst();
    // The first user's confirmation mail (its code) must still arrive.
    await vi.waitFor(
      () => expect(delivered, `outbox row: ${JSON.stringify(row)}`).toContain(email),
      { timeout: 3_000, interval: 50 },
    );
  });
});
