import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CodePurpose } from '../../src/db/tables.js';
import { backends } from '../helpers/backends.js';
import { queueMail } from '../helpers/outbox.js';
import { TestApp, uniqueEmail, type Account } from '../helpers/test-app.js';

const CODE_TTL_MS = 10 * 60_000;
const SEND_WINDOW_MS = 60_000;

/** A 6-digit code guaranteed to differ from `code` (and from the other `offset`s). */
function wrongCode(code: string, offset = 1): string {
  return String((Number(code) + offset) % 1_000_000).padStart(6, '0');
}

function expectInvalidCode(response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(400);
  expect(response.json()).toEqual({ message: expect.any(String), error: 'invalid_code' });
}

function expectRetryAfter(response: LightMyRequestResponse, maxSeconds: number): void {
  const seconds = Number(response.headers['retry-after']);
  expect(Number.isInteger(seconds)).toBe(true);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(maxSeconds);
}

describe.each(backends)('POST /api/confirm-email ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const confirm = (email: string, code: string, token?: string) =>
    t.post('/api/confirm-email', { email, code }, token === undefined ? {} : { token });

  const profileOf = async (account: Account) => {
    const response = await t.call('GET', '/api/profile', { token: account.accessToken });
    expect(response.statusCode).toBe(200);
    return response.json().user;
  };

  it('e-mails a code of 6 decimal digits', async () => {
    const account = await t.register();
    expect(await t.codeFor(account.email)).toMatch(/^\d{6}$/);
  });

  it('stores no plaintext code, only a keyed hash (HMAC-SHA-256, not a bare SHA-256)', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const rows = await t.db
      .selectFrom('one_time_codes')
      .selectAll()
      .where('user_id', '=', account.userId)
      .execute();
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.purpose).toBe('confirm_email');
    expect(Object.values(row).map(String)).not.toContain(code);
    expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row.code_hash).not.toBe(createHash('sha256').update(code).digest('hex'));
  });

  it('confirms with the bearer token (seed shape)', async () => {
    const account = await t.register();
    expect((await profileOf(account)).email_confirmed).toBe(false);
    const response = await confirm(
      account.email,
      await t.codeFor(account.email),
      account.accessToken,
    );
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('{"message":"Email confirmed"}');
    expect((await profileOf(account)).email_confirmed).toBe(true);
  });

  it('confirms without a bearer token ("bearer optional")', async () => {
    const account = await t.register();
    const response = await confirm(account.email, await t.codeFor(account.email));
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('{"message":"Email confirmed"}');
    expect((await profileOf(account)).email_confirmed).toBe(true);
    const user = await t.db
      .selectFrom('users')
      .select('email_confirmed_at')
      .where('id', '=', account.userId)
      .executeTakeFirstOrThrow();
    expect(user.email_confirmed_at).not.toBeNull();
  });

  it('answers 400 invalid_code for a wrong code, which does not burn the code by itself', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    expectInvalidCode(await confirm(account.email, wrongCode(code), account.accessToken));
    expect((await profileOf(account)).email_confirmed).toBe(false);
    expect((await confirm(account.email, code, account.accessToken)).statusCode).toBe(200);
  });

  it('a code of any length is a wrong code like any other: 400 invalid_code (one answer for all)', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    for (const wrong of ['', '1'.repeat(7), '1'.repeat(65), '1'.repeat(1000)])
      expectInvalidCode(await confirm(account.email, wrong, account.accessToken));
    expect((await profileOf(account)).email_confirmed).toBe(false);
    expect((await confirm(account.email, code, account.accessToken)).statusCode).toBe(200);
  });

  it('"valid 10 minutes": the code is refused once 10 minutes have passed', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    t.clock.advance(CODE_TTL_MS + 1);
    expectInvalidCode(await confirm(account.email, code));
    expect((await profileOf(await t.login(account.email, account.password))).email_confirmed).toBe(
      false,
    );
  });

  it('"single use": the code is consumed, and a second confirm (already confirmed) is invalid_code', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const wrong = await confirm(account.email, wrongCode(code));
    expect((await confirm(account.email, code)).statusCode).toBe(200);
    const left = await t.db
      .selectFrom('one_time_codes')
      .select('purpose')
      .where('user_id', '=', account.userId)
      .execute();
    expect(left).toEqual([]);
    const again = await confirm(account.email, code, account.accessToken);
    expectInvalidCode(again);
    expect(again.body).toBe(wrong.body);
  });

  it('a live code of an address confirmed meanwhile (by a password reset) is invalid_code', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email, 1);
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expect((await t.post('/api/forgot-password', { email: account.email })).statusCode).toBe(200);
    const reset = await t.post('/api/reset-password', {
      email: account.email,
      code: await t.codeFor(account.email, 2),
      new_password: 'another-Quiet-harbour-93',
    });
    expect(reset.statusCode, reset.body).toBe(200);
    const signedIn = await t.login(account.email, 'another-Quiet-harbour-93');
    expect((await profileOf(signedIn)).email_confirmed).toBe(true);
    expectInvalidCode(await confirm(account.email, code));
  });

  it('"5 wrong tries burn it": after 5 wrong codes the right one is invalid_code', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    for (let i = 1; i <= 5; i++)
      expectInvalidCode(await confirm(account.email, wrongCode(code, i)));
    expectInvalidCode(await confirm(account.email, code));
    expect((await profileOf(account)).email_confirmed).toBe(false);
  });

  it('4 wrong tries do not burn the code yet', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    for (let i = 1; i <= 4; i++)
      expectInvalidCode(await confirm(account.email, wrongCode(code, i)));
    expect((await confirm(account.email, code)).statusCode).toBe(200);
  });

  it('"sending a new code invalidates older ones": only the newest code confirms', async () => {
    const account = await t.register();
    const older = await t.codeFor(account.email, 1);
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    const send = await t.post('/api/send-confirmation-code', { email: account.email });
    expect(send.statusCode).toBe(200);
    const newer = await t.codeFor(account.email, 2);
    if (newer !== older) expectInvalidCode(await confirm(account.email, older));
    expect((await confirm(account.email, newer)).statusCode).toBe(200);
  });

  it('answers an unknown address with the same invalid_code body as a wrong code', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const wrong = await confirm(account.email, wrongCode(code));
    const unknown = await confirm(uniqueEmail('nobody'), code);
    expectInvalidCode(unknown);
    expect(unknown.body).toBe(wrong.body);
  });

  it("403 email_mismatch with another user's token, which neither consumes the code nor counts a wrong try", async () => {
    const owner = await t.register();
    const other = await t.register();
    const code = await t.codeFor(owner.email);
    const mismatched = [1, 2, 3, 4, 5].map((i) => wrongCode(code, i)).concat(code);
    for (const candidate of mismatched) {
      const response = await confirm(owner.email, candidate, other.accessToken);
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual({ message: expect.any(String), error: 'email_mismatch' });
    }
    expect((await profileOf(owner)).email_confirmed).toBe(false);
    expect((await profileOf(other)).email_confirmed).toBe(false);
    expect((await confirm(owner.email, code, owner.accessToken)).statusCode).toBe(200);
  });

  it("with the user's own token, another spelling of the address is no email_mismatch (compared lower-cased)", async () => {
    const email = uniqueEmail('Mixed.Case');
    const account = await t.register(email);
    const code = await t.codeFor(email);
    expect(email.toUpperCase()).not.toBe(email);
    const response = await confirm(email.toUpperCase(), code, account.accessToken);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.body).toBe('{"message":"Email confirmed"}');
  });

  it('401 with WWW-Authenticate: Bearer for an invalid bearer token, and the code stays usable', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const response = await confirm(account.email, code, 'not.a.token');
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer');
    expect(response.json()).toMatchObject({ error: 'unauthorized' });
    expect((await confirm(account.email, code, account.accessToken)).statusCode).toBe(200);
  });

  it('"two concurrent uses of one code succeed at most once"', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const responses = await Promise.all([
      confirm(account.email, code, account.accessToken),
      confirm(account.email, code),
    ]);
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([200, 400]);
    expectInvalidCode(responses.find((r) => r.statusCode === 400)!);
    expect((await profileOf(account)).email_confirmed).toBe(true);
  });
});

describe.each(backends)('POST /api/send-confirmation-code ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const send = (email: string, token?: string) =>
    t.post('/api/send-confirmation-code', { email }, token === undefined ? {} : { token });

  const expectSent = (response: LightMyRequestResponse) => {
    expect(response.statusCode).toBe(200);
    expect(response.body).toBe('{"message":"Confirmation code sent"}');
  };

  const expectTooManyRequests = (response: LightMyRequestResponse) => {
    expect(response.statusCode).toBe(429);
    expect(response.json()).toEqual({ message: expect.any(String), error: 'too_many_requests' });
    expectRetryAfter(response, 60);
  };

  /**
   * No e-mail went to `address` beyond the `delivered` ones: a mail enqueued afterwards (the
   * barrier) arrives first, and by then nothing for `address` is left in the outbox either.
   */
  const expectNoNewMail = async (address: string, delivered: number) => {
    const barrier = await t.register();
    await t.smtp.waitFor(barrier.email);
    expect(t.smtp.mailsTo(address)).toHaveLength(delivered);
    const pending = await t.db.selectFrom('mail_outbox').select('recipient').execute();
    expect(pending.filter((m) => m.recipient.toLowerCase() === address.toLowerCase())).toEqual([]);
  };

  it('e-mails a new, working code to a registered, unconfirmed address', async () => {
    const account = await t.register();
    await t.codeFor(account.email, 1);
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expectSent(await send(account.email));
    const mail = await t.smtp.waitFor(account.email, 2);
    expect(mail.code).toMatch(/^\d{6}$/);
    const confirmed = await t.post('/api/confirm-email', { email: account.email, code: mail.code });
    expect(confirmed.statusCode).toBe(200);
  });

  it('answers the same for an unknown address, and sends it no e-mail', async () => {
    const email = uniqueEmail('unknown');
    expectSent(await send(email));
    await expectNoNewMail(email, 0);
  });

  it('answers the same for an already confirmed address, and sends it no e-mail', async () => {
    const account = await t.register();
    const code = await t.codeFor(account.email);
    const confirmed = await t.post('/api/confirm-email', { email: account.email, code });
    expect(confirmed.statusCode).toBe(200);
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expectSent(await send(account.email, account.accessToken));
    await expectNoNewMail(account.email, 1);
  });

  it('"the registration e-mail counts as a confirmation send": an immediate send is 429 too_many_requests', async () => {
    const account = await t.register();
    expectTooManyRequests(await send(account.email));
    await t.codeFor(account.email, 1);
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expectSent(await send(account.email));
    await t.codeFor(account.email, 2);
  });

  it('"whether or not the address is registered": a second send to an unknown address is 429', async () => {
    const email = uniqueEmail('unknown');
    expectSent(await send(email));
    expectTooManyRequests(await send(email));
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expectSent(await send(email));
  });

  /** A code request for the account's address, queued `offsetMs` after the account was created. */
  async function queueCodeRequest(account: Account, offsetMs: number, purpose: CodePurpose) {
    const { created_at } = await t.db
      .selectFrom('users')
      .select('created_at')
      .where('id', '=', account.userId)
      .executeTakeFirstOrThrow();
    await queueMail(t.db, {
      recipient: account.email,
      created_at: created_at + offsetMs,
      code_purpose: purpose,
    });
  }

  it.each(['confirm_email', 'reset_password'] as const)(
    'a %s request made before the address was registered, and sent after, is dropped: the registration code stays valid',
    async (purpose) => {
      const account = await t.register();
      const registrationCode = await t.codeFor(account.email);
      // As a busy outbox worker would find it: queued just before the registration, still unsent.
      await queueCodeRequest(account, -1, purpose);
      await expectNoNewMail(account.email, 1);
      const confirmed = await t.post('/api/confirm-email', {
        email: account.email,
        code: registrationCode,
      });
      expect(confirmed.statusCode).toBe(200);
    },
  );

  it('a confirmation request made less than 60 s after the account (it got past the window while the account was written) is dropped', async () => {
    const account = await t.register();
    const registrationCode = await t.codeFor(account.email);
    await queueCodeRequest(account, +1, 'confirm_email');
    await expectNoNewMail(account.email, 1);
    const confirmed = await t.post('/api/confirm-email', {
      email: account.email,
      code: registrationCode,
    });
    expect(confirmed.statusCode).toBe(200);
  });

  it.each(['confirm_email', 'reset_password'] as const)(
    'a %s request that got past a limit which forgot its window (evicted from memory, Redis restarted) within 60 s of the last code is dropped; one after 60 s is sent, once',
    async (purpose) => {
      const account = await t.register();
      await t.codeFor(account.email, 1);
      t.clock.advance(SEND_WINDOW_MS + 1_000);
      const path =
        purpose === 'confirm_email' ? '/api/send-confirmation-code' : '/api/forgot-password';
      expect((await t.post(path, { email: account.email })).statusCode).toBe(200);
      const live = await t.codeFor(account.email, 2);
      // Straight into the outbox, as a limit that forgot the window would have let it through.
      const queueNow = async () => {
        const { created_at } = await t.db
          .selectFrom('users')
          .select('created_at')
          .where('id', '=', account.userId)
          .executeTakeFirstOrThrow();
        await queueCodeRequest(account, t.clock.now() - created_at, purpose);
      };
      t.clock.advance(30_000);
      await queueNow();
      await expectNoNewMail(account.email, 2);
      t.clock.advance(SEND_WINDOW_MS - 30_000 + 1_000);
      await queueNow();
      expect(await t.codeFor(account.email, 3)).not.toBe(live);
      // A backlog: two requests 10 s apart, both still queued when the worker gets to them.
      t.clock.advance(SEND_WINDOW_MS + 1_000);
      await queueNow();
      t.clock.advance(10_000);
      await queueNow();
      await t.codeFor(account.email, 4);
      await expectNoNewMail(account.email, 4);
    },
  );

  it('an older request retried after a newer one was mailed is dropped: the newer code stays valid', async () => {
    const account = await t.register();
    await t.codeFor(account.email, 1);
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    // R1: its first send failed; its retry is due in 3 minutes.
    const r1At = t.clock.now();
    await queueMail(t.db, {
      recipient: account.email,
      created_at: r1At,
      next_attempt_at: r1At + 180_000,
      attempts: 1,
      code_purpose: 'reset_password',
    });
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expect((await t.post('/api/forgot-password', { email: account.email })).statusCode).toBe(200);
    const delivered = await t.codeFor(account.email, 2);
    t.clock.advance(180_000); // R1 comes due
    await expectNoNewMail(account.email, 2);
    const reset = await t.post('/api/reset-password', {
      email: account.email,
      code: delivered,
      new_password: 'another-Lagoon-93-tractor',
    });
    expect(reset.statusCode, reset.body).toBe(200);
  });

  it("403 email_mismatch with another user's bearer token; 401 with an invalid one", async () => {
    const owner = await t.register();
    const other = await t.register();
    const mismatch = await send(owner.email, other.accessToken);
    expect(mismatch.statusCode).toBe(403);
    expect(mismatch.json()).toEqual({ message: expect.any(String), error: 'email_mismatch' });
    const invalid = await send(owner.email, 'not.a.token');
    expect(invalid.statusCode).toBe(401);
    expect(invalid.headers['www-authenticate']).toBe('Bearer');
  });
});
