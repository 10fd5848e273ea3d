import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../helpers/backends.js';
import { randomIp, STRONG_PASSWORD, TestApp } from '../helpers/test-app.js';

// An account registered when an earlier address rule allowed what today's refuses signs in
// (register-login.test.ts) and is still mailed: it must also confirm its address and recover a
// forgotten password. Any other address today's rule refuses still answers 400.

const NEW_PASSWORD = 'another-Quiet-harbour-93';

describe.each(backends)('addresses an earlier rule allowed ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  /**
   * A local part with parentheses, which today's rule refuses (a mail library may read them as a
   * comment); the transport mails the address as stored, which nodemailer quotes on the envelope.
   */
  const earlierAddress = () => `old(rule).${randomBytes(4).toString('hex')}@example.test`;
  const asEnveloped = (email: string) => email.replace(/^(.*)@/, '"$1"@');

  const accountUnder = async (earlier: string) => {
    const account = await t.register();
    await t.codeFor(account.email); // its registration e-mail went to the address it had then
    await t.db
      .updateTable('users')
      .set({ email: earlier, email_normalized: earlier })
      .where('id', '=', account.userId)
      .execute();
    return { ...account, email: earlier };
  };

  it('confirms its address with a code it asked for', async () => {
    const account = await accountUnder(earlierAddress());
    t.clock.advance(61_000); // past the 60 s since its registration code
    const asked = await t.post(
      '/api/send-confirmation-code',
      { email: account.email },
      { token: account.accessToken },
    );
    expect([asked.statusCode, asked.body]).toEqual([200, '{"message":"Confirmation code sent"}']);
    const code = await t.codeFor(asEnveloped(account.email));
    const confirmed = await t.post('/api/confirm-email', { email: account.email, code });
    expect([confirmed.statusCode, confirmed.body]).toEqual([200, '{"message":"Email confirmed"}']);
    const me = await t.call('GET', '/api/profile', { token: account.accessToken });
    expect(me.json().user.email_confirmed).toBe(true);
  });

  it('resets a forgotten password, and signs in with the new one', async () => {
    const account = await accountUnder(earlierAddress());
    const forgot = await t.post('/api/forgot-password', { email: account.email });
    expect(forgot.statusCode, forgot.body).toBe(200);
    const code = await t.codeFor(asEnveloped(account.email));
    const reset = await t.post('/api/reset-password', {
      email: account.email,
      code,
      new_password: NEW_PASSWORD,
    });
    expect(reset.statusCode, reset.body).toBe(200);
    const login = await t.post(
      '/api/login',
      { email: account.email, password: NEW_PASSWORD },
      { ip: randomIp() },
    );
    expect(login.statusCode).toBe(200);
  });

  it('an address of no account that breaks the rule still answers 400 validation_failed', async () => {
    const email = earlierAddress();
    const answers = [
      await t.post('/api/forgot-password', { email }),
      await t.post('/api/reset-password', { email, code: '123456', new_password: NEW_PASSWORD }),
      await t.post('/api/send-confirmation-code', { email }),
      await t.post('/api/confirm-email', { email, code: '123456' }),
    ];
    for (const answer of answers)
      expect([answer.statusCode, answer.json().error]).toEqual([400, 'validation_failed']);
    // And the account that has it now is not someone else's: a registration under it is refused.
    await accountUnder(email);
    const again = await t.post('/api/register', { email, password: STRONG_PASSWORD });
    expect(again.statusCode).toBe(400);
  });
});
