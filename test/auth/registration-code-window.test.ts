import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

// 61 registrations (a password hash each) and their e-mails, then a wait of up to 30 s for the
// outbox: 22 s on SQLite and over 30 s on PostgreSQL on a busy 2-core machine.
vi.setConfig({ testTimeout: 120_000 });

/**
 * API.md: the registration e-mail counts as a confirmation send and starts the 60 s window. A
 * send-confirmation-code that arrives while the registration is still being written must find
 * the window started; a second code would void the first.
 */
describe.each(backends)('the registration e-mail starts the 60 s window ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('no address gets two confirmation e-mails within 60 s, however close the request', async () => {
    const sentToo: string[] = [];
    for (let delayMs = 0; delayMs <= 60; delayMs += 1) {
      const email = uniqueEmail('race');
      const registering = t.post(
        '/api/register',
        { email, password: STRONG_PASSWORD },
        { ip: randomIp() },
      );
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const sending = t.post('/api/send-confirmation-code', { email }, { ip: randomIp() });
      const [registered, sent] = await Promise.all([registering, sending]);
      expect(registered.statusCode).toBe(201);
      if (sent.statusCode === 200) sentToo.push(email);
    }
    // Every e-mail and code request handled (sent, or dropped for an account made after it).
    await vi.waitFor(
      async () => expect(await t.db.selectFrom('mail_outbox').select('id').execute()).toEqual([]),
      { timeout: 30_000, interval: 50 },
    );
    expect(sentToo.filter((email) => t.smtp.mailsTo(email).length > 1)).toEqual([]);
  });
});
