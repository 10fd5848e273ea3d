import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fatalErrorReport } from '../src/operations/logging.js';
import { backends, type Backend } from './helpers/backends.js';
import { apiRouteTable } from './helpers/route-table.js';
import { randomIp, TestApp, uniqueEmail } from './helpers/test-app.js';

const ROUTES = await apiRouteTable();
const concrete = (url: string) => url.replace(/:[a-z_]+/g, '00000000-0000-4000-8000-000000000000');

/** Whether a 6-digit code appears in the log as a number of its own (not inside a longer one). */
const containsCode = (log: string, code: string) => new RegExp(`(?<!\\d)${code}(?!\\d)`).test(log);

/**
 * API.md: "Secrets never appear in logs: no password, code, token or hash." A whole account's life
 * runs with the app logging at info level; then no secret it used or stored may be in the log.
 */
describe.each(backends)('no secrets in logs ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend);
  });
  afterAll(() => t.close());

  it('a full flow (register, codes, confirm, login, refresh, change and reset password) logs no password, code, token or hash', async () => {
    const secrets = new Set<string>();
    const codes = new Set<string>();
    const keep = (...values: unknown[]) => {
      for (const value of values) {
        expect(typeof value).toBe('string');
        secrets.add(value as string);
      }
    };
    const keepTokens = (body: { access_token: unknown; refresh_token: unknown }) => {
      keep(body.access_token, body.refresh_token);
      // The signature alone, too: a log that trims the header would still leak the token.
      keep((body.access_token as string).split('.')[2]);
    };
    const userRow = () =>
      t.db
        .selectFrom('users')
        .select(['id', 'password_hash'])
        .where('email_normalized', '=', email.toLowerCase())
        .executeTakeFirstOrThrow();
    const keepStoredHashes = async () => {
      const { id, password_hash } = await userRow();
      keep(password_hash, password_hash.split('$').at(-1));
      const rows = await t.db
        .selectFrom('one_time_codes')
        .select('code_hash')
        .where('user_id', '=', id)
        .execute();
      for (const row of rows) keep(row.code_hash);
    };

    const email = uniqueEmail('logs');
    const passwords = [
      'first-Lantern-58-meadow',
      'second-Harbor-73-violet',
      'third-Comet-19-walnut',
    ];
    keep(...passwords);
    const ip = randomIp();
    const post = (url: string, body: unknown, token?: string) =>
      t.post(url, body, { ip, ...(token !== undefined && { token }) });

    // Register: a confirmation code is e-mailed.
    const registered = await post('/api/register', { email, password: passwords[0] });
    expect(registered.statusCode).toBe(201);
    keepTokens(registered.json());
    await keepStoredHashes();
    codes.add(await t.codeFor(email, 1));

    // A second code after the 60 s window; a wrong code; then the right one.
    t.clock.advance(61_000);
    const token = registered.json().access_token;
    expect((await post('/api/send-confirmation-code', { email }, token)).statusCode).toBe(200);
    await keepStoredHashes();
    const confirmation = await t.codeFor(email, 2);
    codes.add(confirmation);
    const wrongCode = confirmation === '000000' ? '111111' : '000000';
    expect((await post('/api/confirm-email', { email, code: wrongCode }, token)).statusCode).toBe(
      400,
    );
    expect(
      (await post('/api/confirm-email', { email, code: confirmation }, token)).statusCode,
    ).toBe(200);

    // Login (a failure first), refresh, and a replay inside the grace period.
    expect(
      (await post('/api/login', { email, password: 'wrong-Guess-11-pepper' })).statusCode,
    ).toBe(401);
    keep('wrong-Guess-11-pepper');
    const login = await post('/api/login', { email, password: passwords[0] });
    expect(login.statusCode).toBe(200);
    keepTokens(login.json());
    const refreshed = await post('/api/refresh-token', {
      refresh_token: login.json().refresh_token,
    });
    expect(refreshed.statusCode).toBe(200);
    keepTokens(refreshed.json());
    const replayed = await post('/api/refresh-token', {
      refresh_token: login.json().refresh_token,
    });
    expect(replayed.statusCode).toBe(200);
    keepTokens(replayed.json());
    const current = refreshed.json().access_token;
    expect((await t.call('GET', '/api/sessions', { ip, token: current })).statusCode).toBe(200);

    // Change password (a wrong current password first).
    expect(
      (
        await post(
          '/api/change-password',
          { password: 'not-Mine-64-falcon', new_password: passwords[1] },
          current,
        )
      ).statusCode,
    ).toBe(400);
    keep('not-Mine-64-falcon');
    expect(
      (
        await post(
          '/api/change-password',
          { password: passwords[0], new_password: passwords[1] },
          current,
        )
      ).statusCode,
    ).toBe(200);
    await keepStoredHashes();
    expect((await t.smtp.waitFor(email, 3)).subject).toBe('Your password was changed');

    // Forgot and reset password (a wrong code first).
    expect((await post('/api/forgot-password', { email })).statusCode).toBe(200);
    await keepStoredHashes();
    const resetCode = await t.codeFor(email, 4);
    codes.add(resetCode);
    const wrongReset = resetCode === '999999' ? '888888' : '999999';
    expect(
      (await post('/api/reset-password', { email, code: wrongReset, new_password: passwords[2] }))
        .statusCode,
    ).toBe(400);
    expect(
      (await post('/api/reset-password', { email, code: resetCode, new_password: passwords[2] }))
        .statusCode,
    ).toBe(200);
    await keepStoredHashes();
    const last = await post('/api/login', { email, password: passwords[2] });
    expect(last.statusCode).toBe(200);
    keepTokens(last.json());

    // Let the outbox deliver the last notification too.
    expect((await t.smtp.waitFor(email, 5)).subject).toBe('Your password was reset');

    const log = t.logs.join('');
    // The log was captured at all: requests and deliveries are in it.
    expect(log).toContain('/api/reset-password');
    expect(log).toMatch(/delivered/);

    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(5);
      expect(log.includes(secret), `secret ${secret.slice(0, 12)}… appears in the log`).toBe(false);
    }
    for (const code of codes) expect(containsCode(log, code), `code ${code}`).toBe(false);
  });
});

describe.each(backends)('secrets sent to every endpoint, logging at trace ($name)', (backend) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await TestApp.start(backend, { env: { LOG_LEVEL: 'trace' } });
  });
  afterAll(() => t.close());

  it('no secret sent in a body field (at any depth), a header or the query string of any /api route appears in the log', async () => {
    const secrets: string[] = [];
    const codes: string[] = [];
    const secret = (label: string) => {
      const value = `${label}-${randomBytes(12).toString('base64url')}`;
      secrets.push(value);
      return value;
    };
    for (const route of ROUTES) {
      // A live token, so bearer routes get past authentication into their handlers.
      const account = await t.register(uniqueEmail('secrets'), secret('Account-Password'));
      secrets.push(account.accessToken, account.refreshToken);
      for (const token of [account.accessToken, secret('bogus-bearer')]) {
        const code = String(randomInt(100_000, 1_000_000));
        codes.push(code);
        const body = {
          email: account.email,
          password: secret('password'),
          new_password: secret('new-password'),
          code,
          refresh_token: secret('refresh'),
          access_token: secret('access'),
          all: false,
          profile: { password: secret('nested-password'), codes: [{ code: secret('deep-code') }] },
        };
        const query = `?code=${secret('query-code')}&access_token=${secret('query-token')}`;
        await t.call(route.method, concrete(route.url) + query, {
          body,
          token,
          headers: {
            cookie: `refresh_token=${secret('cookie')}`,
            'proxy-authorization': `Basic ${secret('proxy')}`,
          },
        });
      }
    }

    const log = t.logs.join('');
    // Logging ran at debug and below, and every route was reached.
    expect(log).toMatch(/"level":20,.*"msg":"request received"/);
    for (const route of ROUTES) expect(log).toContain(`"route":"${route.url}"`);
    for (const value of secrets) {
      expect(log.includes(value), `secret ${value.slice(0, 16)}… appears in the log`).toBe(false);
    }
    for (const code of codes) expect(containsCode(log, code), `code ${code}`).toBe(false);
  });

  it("the app's logger replaces secret fields at any depth, in arrays and in errors (their causes too), and keeps an error's own code", () => {
    const hash = `$argon2id$v=19$m=7168,t=9,p=1$${randomBytes(16).toString('base64url')}`;
    const values = {
      password: secret(),
      newPassword: secret(),
      refresh: secret(),
      access: secret(),
      bearer: secret(),
      cookie: secret(),
      causePassword: secret(),
      code: String(randomInt(100_000, 1_000_000)),
    };
    const cause = Object.assign(new Error('inner'), { password: values.causePassword });
    const error = Object.assign(new Error('insert failed', { cause }), {
      code: '23502',
      detail: `Failing row contains (1, ada@example.test, ${hash}).`,
    });
    const before = t.logs.length;
    t.app.log.warn(
      {
        body: {
          user: { credentials: { password: values.password, new_password: values.newPassword } },
        },
        sessions: [[{ refresh_token: values.refresh }], { access_token: values.access }],
        headers: { authorization: `Bearer ${values.bearer}`, cookie: values.cookie },
        attempt: { code: values.code },
        err: error,
      },
      'a line someone adds later',
    );
    const written = t.logs.slice(before).join('');
    for (const value of [...Object.values(values), hash]) {
      expect(written.includes(value), `${value} appears in the log`).toBe(false);
    }
    const line = JSON.parse(written) as LoggedLine;
    expect(line.body.user.credentials).toEqual({
      password: '[redacted]',
      new_password: '[redacted]',
    });
    expect(line.sessions[0][0].refresh_token).toBe('[redacted]');
    expect(line.attempt.code).toBe('[redacted]');
    expect(line.headers).toEqual({ authorization: '[redacted]', cookie: '[redacted]' });
    // The error keeps what says what went wrong: type, message, stack and its own code.
    expect(line.err).toMatchObject({ type: 'Error', message: 'insert failed', code: '23502' });
    expect(line.err.stack).toMatch(/^Error: insert failed\n\s+at /);
    expect(line.err.detail).toBe('[redacted]');
    expect(line.err.cause).toMatchObject({ message: 'inner', password: '[redacted]' });
  });

  // README, Production notes: "Every field named like a secret (`password`, `new_password`,
  // `code`, `refresh_token`, `access_token`, `token`, `password_hash`, `code_hash`,
  // `authorization`, `cookie`, …) is replaced with `[redacted]` at any depth".
  it.each(['password_hash', 'code_hash', 'token', 'set-cookie', 'proxy-authorization'])(
    "the app's logger replaces %s too, at any depth",
    (field) => {
      const value = secret();
      const before = t.logs.length;
      t.app.log.warn({ [field]: value, row: { nested: [{ [field]: value }] } }, 'a line');
      const written = t.logs.slice(before).join('');
      expect(written).not.toContain(value);
      const line = JSON.parse(written) as Record<string, unknown> & {
        row: { nested: Record<string, unknown>[] };
      };
      expect(line[field]).toBe('[redacted]');
      expect(line.row.nested[0]?.[field]).toBe('[redacted]');
    },
  );

  it("keeps a Redis command's name, not its arguments (a PUBLISH carries a chat message's text)", () => {
    const text = secret();
    const failure = Object.assign(new Error('Command timed out'), {
      command: { name: 'publish', args: ['events:user:1', JSON.stringify({ text })] },
    });
    const before = t.logs.length;
    t.app.log.warn(
      { err: failure },
      "Redis cannot take events: they reach this instance's sockets only",
    );
    const written = t.logs.slice(before).join('');
    expect(written.includes(text)).toBe(false);
    expect(JSON.parse(written).err.command).toEqual({ name: 'publish' });
  });
});

describe('URL credentials in errors', () => {
  // A configured URL (SMTP_URL, REDIS_URL, DATABASE_URL) carries its password; an error may quote
  // it whole (Node's ERR_INVALID_URL keeps it as `input`, a client may put it in its message).
  const password = secret();
  const quoting = () =>
    Object.assign(new TypeError(`Invalid URL smtp://mailer:${password}@mail relay:587`), {
      code: 'ERR_INVALID_URL',
      input: `smtp://mailer:${password}@mail%20relay:587`,
      cause: new Error(`connect to redis://:${password}@cache:6379/0 failed`),
    });

  it('are replaced in a logged error, its message, stack, fields and causes', async () => {
    const t = await TestApp.start(backends[0] as Backend);
    try {
      const before = t.logs.length;
      t.app.log.error({ err: quoting() }, 'start failed');
      const written = t.logs.slice(before).join('');
      expect(written).not.toContain(password);
      const { err } = JSON.parse(written) as { err: Record<string, unknown> };
      expect(err.input).toBe('smtp://[redacted]@mail%20relay:587');
      expect(err.code).toBe('ERR_INVALID_URL');
      expect(err.cause).toMatchObject({
        message: 'connect to redis://[redacted]@cache:6379/0 failed',
      });
    } finally {
      await t.close();
    }
  });

  it('are replaced in the report of an error that ends the process (server.ts)', () => {
    const report = fatalErrorReport(quoting());
    expect(report).not.toContain(password);
    expect(report).toMatch(
      /^fatal: TypeError: Invalid URL smtp:\/\/\[redacted\]@mail relay:587\n\s+at /,
    );
    expect(report).toContain('"code":"ERR_INVALID_URL"');
    expect(report).toContain('"input":"smtp://[redacted]@mail%20relay:587"');
    expect(fatalErrorReport(`postgres://app:${password}@db/x`)).toBe(
      'fatal: postgres://[redacted]@db/x',
    );
  });
});

/** The fields of the line the test above writes. */
interface LoggedLine {
  body: { user: { credentials: unknown } };
  sessions: [[{ refresh_token: unknown }], unknown];
  attempt: { code: unknown };
  headers: unknown;
  err: { stack: string; detail: unknown; cause: unknown };
}

function secret(): string {
  return `s3cret-${randomBytes(12).toString('base64url')}`;
}

describe.each(backends)('start-up warnings ($name)', (backend) => {
  const trustProxyWarning = /TRUST_PROXY=true: .*left-most X-Forwarded-For entry.*client controls/;

  it('TRUST_PROXY=true warns that the left-most X-Forwarded-For entry is client-controlled, and recommends the list form', async () => {
    const t = await TestApp.start(backend, { env: { TRUST_PROXY: 'true' } });
    await t.close();
    const warnings = t.logs.filter((line) => trustProxyWarning.test(line));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0] as string).level).toBe(40);
    expect(warnings[0]).toMatch(/TRUST_PROXY=10\.0\.0\.5/);
  });

  it('a list of proxies does not warn', async () => {
    const t = await TestApp.start(backend, { env: { TRUST_PROXY: '10.0.0.5,10.0.1.0/24' } });
    await t.close();
    expect(t.logs.filter((line) => /TRUST_PROXY/.test(line))).toEqual([]);
  });
});

describe('what a fatal report makes of odd input', () => {
  it('masks a password holding a raw @ (URL parsers read up to the last one)', () => {
    expect(fatalErrorReport('connect redis://:p@ss@cache:6379/0 failed')).toBe(
      'fatal: connect redis://[redacted]@cache:6379/0 failed',
    );
    // An e-mail address or an @ in a path is no credential.
    expect(fatalErrorReport('mail ada@example.test via smtp://relay/x@y')).toBe(
      'fatal: mail ada@example.test via smtp://relay/x@y',
    );
  });

  it('never throws, whatever was thrown, and redacts a thrown object', () => {
    expect(() => fatalErrorReport(Object.create(null))).not.toThrow();
    expect(fatalErrorReport({ password: 'hunter2', url: 'smtp://u:pw@h' })).toBe(
      'fatal: {"password":"[redacted]","url":"smtp://[redacted]@h"}',
    );
  });
});
