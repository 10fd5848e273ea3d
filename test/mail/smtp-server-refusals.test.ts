import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends } from '../helpers/backends.js';
import {
  startRefusingSmtp,
  type RefusingSmtp,
  type SmtpRefusal,
} from '../helpers/refusing-smtp.js';
import { STRONG_PASSWORD, TestApp, randomIp, uniqueEmail } from '../helpers/test-app.js';

// API.md: "E-mails go through a durable outbox table and are delivered in the background with
// retries: a slow or failing mail server never slows or fails the HTTP request, and no message is
// lost across a restart."
//
// A 5xx that is about the server/session (AUTH refused, 554 greeting), not about the message or
// its recipient, must be retried: once the server (or its credentials) is fixed the mail goes out.

const WAIT = { timeout: 15_000, interval: 50 };

const rowsTo = (t: TestApp, email: string) =>
  t.db.selectFrom('mail_outbox').selectAll().where('recipient', '=', email).execute();

/** Registers `email` (its confirmation mail is queued); answers the access token. */
async function register(t: TestApp, email: string): Promise<string> {
  const r = await t.post('/api/register', { email, password: STRONG_PASSWORD }, { ip: randomIp() });
  expect(r.statusCode).toBe(201);
  return r.json().access_token as string;
}

describe.each(backends.slice(0, 1))('SMTP server-level 5xx ($name)', (backend) => {
  let t: TestApp;
  let smtp: RefusingSmtp;
  let authWorks = false;
  beforeAll(async () => {
    smtp = await startRefusingSmtp(() => undefined, {
      authOptional: false,
      allowInsecureAuth: true,
      onAuth(auth, _session, callback) {
        // e.g. the provider's auth backend is down for a minute, or credentials being rotated
        if (!authWorks)
          return callback(
            Object.assign(new Error('Authentication temporarily broken'), { responseCode: 535 }),
          );
        callback(null, { user: auth.username });
      },
    });
    t = await TestApp.start(backend, { env: { SMTP_URL: smtp.url.replace('//', '//u:p@') } });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it('a registration e-mail refused by a transient AUTH failure is retried once the server is fixed', async () => {
    const email = uniqueEmail();
    await register(t, email);
    await vi.waitFor(async () => {
      const [row] = await rowsTo(t, email);
      expect(row?.attempts).toBeGreaterThanOrEqual(1);
      expect(row?.last_error ?? row?.failed_at).toBeTruthy();
    }, WAIT);

    authWorks = true; // the mail server is fine again
    t.clock.advance(60 * 60_000); // any backoff is long over
    const other = uniqueEmail();
    await register(t, other);
    await vi.waitFor(() => expect(smtp.delivered).toContain(other), WAIT); // the worker runs again

    const [row] = await rowsTo(t, email);
    // The first user's confirmation mail (its code) must still arrive.
    await vi.waitFor(
      () => expect(smtp.delivered, `outbox row: ${JSON.stringify(row)}`).toContain(email),
      { timeout: 3_000, interval: 50 },
    );
  });
});

const DAY = 24 * 60 * 60_000;

/**
 * A relay that refuses at RCPT TO: for good for one mailbox (`550 5.1.1`), or as a policy that
 * holds for every message (`554 5.7.1 Relay access denied`: our credentials or address are not
 * let through), or for now (`452` mailbox full). Addresses say which: `gone.`, `relay.`, `full.`.
 */
describe.each(backends.slice(0, 1))('SMTP refusals at RCPT TO ($name)', (backend) => {
  let t: TestApp;
  let smtp: RefusingSmtp;
  let relayAllowed = false;
  const refusal = (address: string): SmtpRefusal | undefined => {
    if (address.startsWith('gone.'))
      return { message: '5.1.1 No such mailbox here', responseCode: 550 };
    if (address.startsWith('relay.') && !relayAllowed)
      return { message: `5.7.1 <${address}>: Relay access denied`, responseCode: 554 };
    if (address.startsWith('full.')) return { message: '4.2.2 Mailbox full', responseCode: 452 };
    return undefined;
  };
  beforeAll(async () => {
    smtp = await startRefusingSmtp(refusal);
    t = await TestApp.start(backend, { env: { SMTP_URL: smtp.url } });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it('an unknown mailbox (5.1.1) is marked failed at once', async () => {
    const email = uniqueEmail('gone');
    await register(t, email);
    await vi.waitFor(
      async () => expect((await rowsTo(t, email))[0]?.failed_at).not.toBeNull(),
      WAIT,
    );
    expect((await rowsTo(t, email))[0]).toMatchObject({ attempts: 1 });
  });

  it('a relay refusing to relay (5.7.1) is retried, and the mail goes out once it relays', async () => {
    const email = uniqueEmail('relay');
    await register(t, email);
    await vi.waitFor(
      async () => expect((await rowsTo(t, email))[0]?.attempts).toBeGreaterThan(1),
      WAIT,
    );
    expect((await rowsTo(t, email))[0]).toMatchObject({ failed_at: null });
    relayAllowed = true; // the operator fixed the relay's settings
    await vi.waitFor(() => expect(smtp.delivered).toContain(email), WAIT);
  });

  it('a mail still refused when its time in the queue is over is given up: a day for a code, 5 days for the rest', async () => {
    const email = uniqueEmail('full');
    const token = await register(t, email); // its confirmation code
    const changed = await t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: 'another-Quiet-harbour-93' },
      { token },
    ); // and the notification that the password changed
    expect(changed.statusCode).toBe(200);
    const failedOf = async () =>
      Object.fromEntries(
        (await rowsTo(t, email)).map((row) => [
          row.code_purpose ?? 'notice',
          row.failed_at !== null,
        ]),
      );
    await vi.waitFor(async () => {
      const rows = await rowsTo(t, email);
      expect(rows.map((row) => row.attempts >= 2)).toEqual([true, true]);
    }, WAIT);
    expect(await failedOf()).toEqual({ confirm_email: false, notice: false });

    t.clock.advance(DAY);
    await vi.waitFor(async () => expect((await failedOf()).confirm_email).toBe(true), WAIT);
    expect((await failedOf()).notice).toBe(false);

    t.clock.advance(4 * DAY);
    await vi.waitFor(async () => expect((await failedOf()).notice).toBe(true), WAIT);
    const given = (await rowsTo(t, email)).map((row) => row.last_error);
    expect(given).toEqual([expect.stringMatching(/452/), expect.stringMatching(/452/)]);
    expect(t.logs.join('')).toMatch(/not delivered within its time in the queue; given up/);
  });
});

/** A relay that takes every recipient, then refuses every message at the end of DATA. */
describe.each(backends.slice(0, 1))('SMTP refusals at the end of DATA ($name)', (backend) => {
  let t: TestApp;
  let smtp: RefusingSmtp;
  beforeAll(async () => {
    smtp = await startRefusingSmtp(() => undefined, {
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () =>
          callback(
            Object.assign(new Error('5.6.0 Message content rejected'), { responseCode: 554 }),
          ),
        );
      },
    });
    t = await TestApp.start(backend, { env: { SMTP_URL: smtp.url } });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  // README, Mail: a 5xx answer to the recipient or to the message (RCPT TO, DATA: an unknown
  // mailbox, content refused) marks the message failed.
  it('content refused (554 5.6.0) is marked failed at once, without a retry', async () => {
    const email = uniqueEmail();
    await register(t, email);
    const row = await vi.waitFor(async () => {
      const [found] = await rowsTo(t, email);
      expect(found?.last_error).toBeTruthy();
      return found!;
    }, WAIT);
    expect(row.failed_at).not.toBeNull();
    expect(row.attempts).toBe(1);
    expect(row.last_error).toMatch(/554/);
  });
});
