import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { backends, type ProvisionedBackend } from '../helpers/backends.js';
import { SmtpSink, type ReceivedMail } from '../helpers/smtp-sink.js';
import { randomIp, STRONG_PASSWORD, TestApp, uniqueEmail } from '../helpers/test-app.js';

const NEW_PASSWORD = 'another-Quiet-harbour-93';
const CODE_TTL_MS = 10 * 60_000;
const SEND_WINDOW_MS = 60_000;
const RESET_SUBJECT = 'Your password reset code';
const FORGOT_MESSAGE = '{"message":"If the address is registered, a reset code has been sent"}';

function wrongCode(code: string, offset = 1): string {
  return String((Number(code) + offset) % 1_000_000).padStart(6, '0');
}

function expectError(response: LightMyRequestResponse, status: number, error: string): void {
  expect(response.statusCode).toBe(status);
  expect(response.json()).toEqual({ message: expect.any(String), error });
}

describe.each(backends)('forgot-password and reset-password ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const forgot = (email: string) => t.post('/api/forgot-password', { email });
  const reset = (email: string, code: string, newPassword = NEW_PASSWORD) =>
    t.post('/api/reset-password', { email, code, new_password: newPassword });
  const loginStatus = async (email: string, password: string) =>
    (await t.post('/api/login', { email, password }, { ip: randomIp() })).statusCode;

  /** The first mail to `to` with this subject, waiting for its delivery. */
  const mailWithSubject = async (to: string, subject: string): Promise<ReceivedMail> => {
    for (let n = 1; ; n++) {
      const mail = await t.smtp.waitFor(to, n);
      if (mail.subject === subject) return mail;
    }
  };

  /** Registers an account and asks for a reset code; returns both. */
  const accountWithResetCode = async () => {
    const account = await t.register();
    expect((await forgot(account.email)).statusCode).toBe(200);
    const mail = await mailWithSubject(account.email, RESET_SUBJECT);
    expect(mail.code).toMatch(/^\d{6}$/);
    return { account, code: mail.code as string };
  };

  describe('POST /api/forgot-password', () => {
    it('answers 200 with the same message for a registered and an unknown address', async () => {
      const account = await t.register();
      const registered = await forgot(account.email);
      const unknown = await forgot(uniqueEmail('nobody'));
      expect(registered.statusCode).toBe(200);
      expect(registered.body).toBe(FORGOT_MESSAGE);
      expect(unknown.statusCode).toBe(200);
      expect(unknown.body).toBe(FORGOT_MESSAGE);
    });

    it('e-mails a 6-digit reset code to a registered address only', async () => {
      const unknown = uniqueEmail('nobody');
      expect((await forgot(unknown)).statusCode).toBe(200);
      const { account } = await accountWithResetCode();
      const pending = await t.db.selectFrom('mail_outbox').select('recipient').execute();
      expect(pending.map((m) => m.recipient.toLowerCase())).not.toContain(unknown.toLowerCase());
      // The registered address's mails were enqueued later, so they act as a barrier.
      await t.smtp.waitFor(account.email, 2);
      expect(t.smtp.mailsTo(unknown)).toEqual([]);
    });

    it.each([
      ['a registered address', true],
      ['an unknown address', false],
    ])(
      '"at most one send per address per 60 s": 429 too_many_requests for %s',
      async (_, registered) => {
        const email = registered ? (await t.register()).email : uniqueEmail('nobody');
        expect((await forgot(email)).statusCode).toBe(200);
        const refused = await forgot(email);
        expectError(refused, 429, 'too_many_requests');
        const retryAfter = Number(refused.headers['retry-after']);
        expect(Number.isInteger(retryAfter)).toBe(true);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        t.clock.advance(SEND_WINDOW_MS + 1_000);
        expect((await forgot(email)).statusCode).toBe(200);
      },
    );
  });

  it('a request that queued nothing (the outbox insert failed) does not count: a retry is taken at once', async () => {
    const { email } = await t.register();
    const postgres = backend.name.startsWith('postgres');
    // The outbox refuses inserts for a moment, as a database failing mid-request would.
    if (postgres) {
      await sql`create function refuse_mail() returns trigger language plpgsql
        as $$ begin raise exception 'connection reset'; end $$`.execute(t.db);
      await sql`create trigger refuse_mail before insert on mail_outbox
        for each row execute function refuse_mail()`.execute(t.db);
    } else {
      await sql`create trigger refuse_mail before insert on mail_outbox
        begin select raise(abort, 'connection reset'); end`.execute(t.db);
    }
    try {
      expect((await forgot(email)).statusCode).toBe(500);
    } finally {
      await sql`drop trigger refuse_mail${sql.raw(postgres ? ' on mail_outbox' : '')}`.execute(
        t.db,
      );
      if (postgres) await sql`drop function refuse_mail()`.execute(t.db);
    }
    expect((await forgot(email)).statusCode).toBe(200);
    expectError(await forgot(email), 429, 'too_many_requests'); // this one did count
  });

  describe('POST /api/reset-password', () => {
    it('answers 200 {"message":"Password reset successful"}, with no tokens; the new password logs in', async () => {
      const { account, code } = await accountWithResetCode();
      const response = await reset(account.email, code);
      expect(response.statusCode).toBe(200);
      expect(response.body).toBe('{"message":"Password reset successful"}');
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(200);
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(401);
    });

    it('"every session revoked": access and refresh tokens of earlier sessions fail', async () => {
      const { account, code } = await accountWithResetCode();
      const second = await t.login(account.email, STRONG_PASSWORD);
      expect((await reset(account.email, code)).statusCode).toBe(200);
      for (const session of [account, second]) {
        const profile = await t.call('GET', '/api/profile', { token: session.accessToken });
        expectError(profile, 401, 'unauthorized');
        const refresh = await t.post('/api/refresh-token', { refresh_token: session.refreshToken });
        expectError(refresh, 401, 'invalid_refresh_token');
      }
    });

    it('"a notification e-mail is sent": "Your password was reset"', async () => {
      const { account, code } = await accountWithResetCode();
      expect((await reset(account.email, code)).statusCode).toBe(200);
      const mail = await mailWithSubject(account.email, 'Your password was reset');
      expect(mail.raw).not.toContain(NEW_PASSWORD);
    });

    it('weak_password is checked first: it neither consumes the code nor counts as a wrong try', async () => {
      const { account, code } = await accountWithResetCode();
      const weak = 'password123';
      for (let i = 1; i <= 6; i++) {
        const response = await reset(account.email, wrongCode(code, i), weak);
        expect(response.statusCode).toBe(400);
        expect(response.json()).toMatchObject({
          error: 'weak_password',
          details: [{ field: 'new_password', message: expect.any(String) }],
        });
      }
      const weakWithRightCode = await reset(account.email, code, 'short');
      expect(weakWithRightCode.json()).toMatchObject({ error: 'weak_password' });
      expect((await reset(account.email, code)).statusCode).toBe(200);
    });

    it('400 weak_password for a new password far over 128 code points too, before the code', async () => {
      const { account, code } = await accountWithResetCode();
      for (const length of [129, 4097, 8000]) {
        const response = await reset(account.email, code, 'Zq7'.repeat(length / 3 + 1));
        expect(response.statusCode, response.body).toBe(400);
        expect(response.json()).toMatchObject({
          error: 'weak_password',
          details: [{ field: 'new_password', message: expect.any(String) }],
        });
      }
      expect((await reset(account.email, code)).statusCode).toBe(200);
    });

    it('400 invalid_code for a code of any length, like any other wrong code', async () => {
      const account = await t.register();
      for (const wrong of ['1'.repeat(7), '1'.repeat(65), '1'.repeat(1000)])
        expectError(await reset(account.email, wrong), 400, 'invalid_code');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('400 invalid_code for a wrong code; one wrong try does not burn it', async () => {
      const { account, code } = await accountWithResetCode();
      expectError(await reset(account.email, wrongCode(code)), 400, 'invalid_code');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
      expect((await reset(account.email, code)).statusCode).toBe(200);
    });

    it('"5 wrong tries burn it"', async () => {
      const { account, code } = await accountWithResetCode();
      for (let i = 1; i <= 5; i++)
        expectError(await reset(account.email, wrongCode(code, i)), 400, 'invalid_code');
      expectError(await reset(account.email, code), 400, 'invalid_code');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('"single use": the code works once', async () => {
      const { account, code } = await accountWithResetCode();
      expect((await reset(account.email, code)).statusCode).toBe(200);
      expectError(await reset(account.email, code, 'third-Bright-canyon-12'), 400, 'invalid_code');
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(200);
    });

    it('"two concurrent uses of one code succeed at most once": exactly one of two resets wins', async () => {
      const { account, code } = await accountWithResetCode();
      const candidates = ['first-Quiet-harbour-93', 'second-Loud-meadow-57'];
      const responses = await Promise.all(
        candidates.map((next) => reset(account.email, code, next)),
      );
      expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 400]);
      const loser = responses.findIndex((r) => r.statusCode === 400);
      expectError(responses[loser]!, 400, 'invalid_code');
      const logins = await Promise.all(candidates.map((next) => loginStatus(account.email, next)));
      expect(logins).toEqual(candidates.map((_, i) => (i === loser ? 401 : 200)));
    });

    it('"sending a new code invalidates older ones": only the newest reset code works', async () => {
      const { account, code: older } = await accountWithResetCode();
      t.clock.advance(SEND_WINDOW_MS + 1_000);
      expect((await forgot(account.email)).statusCode).toBe(200);
      const mails = () => t.smtp.mailsTo(account.email).filter((m) => m.subject === RESET_SUBJECT);
      await vi.waitFor(() => expect(mails()).toHaveLength(2), { timeout: 10_000 });
      const newer = mails()[1]!.code as string;
      if (newer !== older) expectError(await reset(account.email, older), 400, 'invalid_code');
      expect((await reset(account.email, newer)).statusCode).toBe(200);
      expect(await loginStatus(account.email, NEW_PASSWORD)).toBe(200);
    });

    it('"a successful change or reset clears the count" of wrong current passwords', async () => {
      const { account, code } = await accountWithResetCode();
      for (let i = 0; i < 5; i++) {
        const wrong = await t.post(
          '/api/change-password',
          { password: `wrong-Current-${i}-x`, new_password: 'third-Bright-canyon-12' },
          { token: account.accessToken },
        );
        expectError(wrong, 400, 'incorrect_password');
      }
      expect((await reset(account.email, code)).statusCode).toBe(200);
      // The reset ended every session: sign in with the new password, then change it.
      const fresh = await t.login(account.email, NEW_PASSWORD);
      const change = await t.post(
        '/api/change-password',
        { password: NEW_PASSWORD, new_password: 'third-Bright-canyon-12' },
        { token: fresh.accessToken },
      );
      expect(change.statusCode).toBe(200);
    });

    it('"valid 10 minutes": the code is refused once 10 minutes have passed', async () => {
      const { account, code } = await accountWithResetCode();
      t.clock.advance(CODE_TTL_MS + 1);
      expectError(await reset(account.email, code), 400, 'invalid_code');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);
    });

    it('400 invalid_code for an unknown address', async () => {
      expectError(await reset(uniqueEmail('nobody'), '123456'), 400, 'invalid_code');
    });

    it('reset and confirmation codes are separate purposes: neither works for the other', async () => {
      const account = await t.register();
      const confirmCode = await t.codeFor(account.email, 1);
      let resetCode = confirmCode;
      while (resetCode === confirmCode) {
        expect((await forgot(account.email)).statusCode).toBe(200);
        resetCode = (await t.smtp.waitFor(account.email, t.smtp.mailsTo(account.email).length + 1))
          .code as string;
        t.clock.advance(SEND_WINDOW_MS + 1_000);
      }
      const confirmWithReset = await t.post('/api/confirm-email', {
        email: account.email,
        code: resetCode,
      });
      expectError(confirmWithReset, 400, 'invalid_code');
      expectError(await reset(account.email, confirmCode), 400, 'invalid_code');
      expect(await loginStatus(account.email, STRONG_PASSWORD)).toBe(200);

      const confirmed = await t.post('/api/confirm-email', {
        email: account.email,
        code: confirmCode,
      });
      expect(confirmed.statusCode).toBe(200);
      expect((await reset(account.email, resetCode)).statusCode).toBe(200);
    });
  });
});

describe.each(backends)('a reset code request across a restart ($name)', (backend) => {
  let provisioned: ProvisionedBackend;
  let sink: SmtpSink;
  const running = new Set<TestApp>();
  const start = async () => {
    const app = await TestApp.start(provisioned, { smtp: sink });
    running.add(app);
    return app;
  };
  /** Stops the service; the provisioned database stays. */
  const stop = async (app: TestApp) => {
    running.delete(app);
    await app.close();
  };
  beforeAll(async () => {
    [provisioned, sink] = await Promise.all([backend.provision(), SmtpSink.start()]);
  });
  afterAll(async () => {
    await Promise.all([...running].map(stop));
    await provisioned.drop();
  });

  const failedRequest = (db: TestApp['db'], email: string) =>
    db
      .selectFrom('mail_outbox')
      .select('last_error')
      .where('recipient', '=', email)
      .where('code_purpose', '=', 'reset_password')
      .where('last_error', 'is not', null)
      .executeTakeFirst();

  it('"no message is lost across a restart": a request still unsent at the stop is sent after the next start, with a working code', async () => {
    const first = await start();
    const account = await first.register();
    await sink.waitFor(account.email, 1);
    await sink.stop();
    const forgot = await first.post('/api/forgot-password', { email: account.email });
    expect(forgot.statusCode).toBe(200);
    await vi.waitFor(
      async () => expect(await failedRequest(first.db, account.email)).toBeTruthy(),
      {
        timeout: 10_000,
        interval: 50,
      },
    );
    await stop(first);

    await sink.listen();
    const second = await start();
    // A request claimed just before the stop stays locked for the claim time (5 s in tests).
    const mail = await sink.waitFor(account.email, 2, 20_000);
    expect(mail.subject).toBe(RESET_SUBJECT);
    const reset = await second.post('/api/reset-password', {
      email: account.email,
      code: mail.code,
      new_password: NEW_PASSWORD,
    });
    expect(reset.statusCode).toBe(200);
  });
});

const WAIT_FOR_SEND = { timeout: 10_000, interval: 50 };

describe.each(backends)('a reset code whose e-mail fails to send ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  const codeRow = (userId: string) =>
    t.db
      .selectFrom('one_time_codes')
      .select(['code_hash', 'failed_attempts'])
      .where('user_id', '=', userId)
      .where('purpose', '=', 'reset_password')
      .executeTakeFirst();

  it('keeps its tries when a retry sends a new code: five wrong ones per request, however many sends', async () => {
    const account = await t.register();
    await t.codeFor(account.email);
    await t.smtp.stop();
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expect((await t.post('/api/forgot-password', { email: account.email })).statusCode).toBe(200);
    const first = await vi.waitFor(async () => {
      const row = await codeRow(account.userId);
      expect(row).toBeDefined();
      return row!;
    }, WAIT_FOR_SEND);
    // A stored code no one received yet: an attacker's four wrong tries at it.
    for (let i = 0; i < 4; i++) {
      const guess = await t.post('/api/reset-password', {
        email: account.email,
        code: '000000',
        new_password: NEW_PASSWORD,
      });
      expect(guess.statusCode).toBe(400);
    }
    // The failed send is retried with another code (the first one's hash is gone)...
    const replaced = await vi.waitFor(async () => {
      const row = await codeRow(account.userId);
      expect(row?.code_hash).not.toBe(first.code_hash);
      return row!;
    }, WAIT_FOR_SEND);
    // ...which takes over the tries left, not five new ones.
    expect(replaced.failed_attempts).toBeGreaterThanOrEqual(4);
    await t.smtp.listen();
    const mail = await t.smtp.waitFor(account.email, 2, 10_000);
    expect(mail.subject).toBe(RESET_SUBJECT);
    const reset = await t.post('/api/reset-password', {
      email: account.email,
      code: mail.code,
      new_password: NEW_PASSWORD,
    });
    expect(reset.statusCode).toBe(200); // the fifth try, and the right code
  });

  it('a reset asked for before a password change mails no usable code after it (its send failed, then retried)', async () => {
    const account = await t.register();
    await t.codeFor(account.email);
    await t.smtp.stop();
    t.clock.advance(SEND_WINDOW_MS + 1_000);
    expect((await t.post('/api/forgot-password', { email: account.email })).statusCode).toBe(200);
    await vi.waitFor(
      async () => expect(await codeRow(account.userId)).toBeDefined(),
      WAIT_FOR_SEND,
    );
    const changed = await t.post(
      '/api/change-password',
      { password: STRONG_PASSWORD, new_password: NEW_PASSWORD },
      { token: account.accessToken },
    );
    expect(changed.statusCode).toBe(200);
    await t.smtp.listen();
    // The change's notification goes out; the reset request is dropped, not mailed with a new code.
    const subjects = () => t.smtp.mailsTo(account.email).map((mail) => mail.subject);
    await vi.waitFor(
      () => expect(subjects()).toContain('Your password was changed'),
      WAIT_FOR_SEND,
    );
    await vi.waitFor(
      async () => expect(await t.db.selectFrom('mail_outbox').select('id').execute()).toEqual([]),
      WAIT_FOR_SEND,
    );
    expect(await codeRow(account.userId)).toBeUndefined();
    // A retry composed just before the change committed may still be delivered (a send under way
    // is not recalled: on a busy machine, its connection can outlast the change), but the change
    // voided its code.
    const resets = t.smtp.mailsTo(account.email).filter((mail) => mail.subject === RESET_SUBJECT);
    expect(resets.length).toBeLessThanOrEqual(1);
    for (const mail of resets) {
      const used = await t.post('/api/reset-password', {
        email: account.email,
        code: mail.code,
        new_password: 'another-Quiet-harbour-71',
      });
      expect([used.statusCode, used.json().error]).toEqual([400, 'invalid_code']);
    }
  });
});
