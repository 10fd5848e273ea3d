import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as UsersStore from '../../src/accounts/users.store.js';
import { backends } from '../helpers/backends.js';
import { arm, type GateSlot } from '../helpers/gate.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

// 61 registrations (a password hash each) and their e-mails, then a wait of up to 30 s for the
// outbox: 22 s on SQLite and over 30 s on PostgreSQL on a busy 2-core machine.
vi.setConfig({ testTimeout: 120_000 });

/** A gate in the registration's transaction, armed by one test: held while the account is written. */
const gate = vi.hoisted(() => ({}) as GateSlot);

vi.mock('../../src/accounts/users.store.js', async (importOriginal) =>
  (await import('../helpers/gate.js')).withGate(
    await importOriginal<typeof UsersStore>(),
    'insertUser',
    gate,
  ),
);

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

  it('a send-confirmation-code while the account is being written answers 429 too_many_requests', async () => {
    const email = uniqueEmail('held');
    const { reached, release } = arm(gate);
    const registering = t.post('/api/register', { email, password: STRONG_PASSWORD });
    await reached;
    const sending = t.post('/api/send-confirmation-code', { email }, { ip: randomIp() });
    // Answered at once when the window is started; a send let through would wait on the database
    // (SQLite: behind the registration's transaction), so it is released after a while.
    await Promise.race([sending, new Promise((resolve) => setTimeout(resolve, 500))]);
    release();
    const [registered, sent] = await Promise.all([registering, sending]);
    expect(registered.statusCode).toBe(201);
    expect([sent.statusCode, sent.json().error]).toEqual([429, 'too_many_requests']);
  });
});
