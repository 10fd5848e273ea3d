import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

const SECRET = 'k'.repeat(32);
const POSTGRES = 'postgres://app@127.0.0.1:5432/auth';

/** loadConfig must throw a ConfigError whose message names the variable (and matches `message`). */
function errorMessageOf(env: Record<string, string>): string {
  let thrown: unknown;
  try {
    loadConfig(env);
  } catch (error) {
    thrown = error;
  }
  expect(thrown, `no error for ${JSON.stringify(env)}`).toBeInstanceOf(ConfigError);
  return (thrown as Error).message;
}

function expectConfigError(env: Record<string, string>, message: RegExp): void {
  expect(errorMessageOf(env)).toMatch(message);
}

describe('loadConfig: defaults (API.md, Configuration)', () => {
  const config = loadConfig({});

  it('the service sets PostgreSQL’s statement_timeout on its connections', () => {
    expect(config.statementTimeoutSetBy).toBe('service');
  });

  it('PORT 3000, HOST 127.0.0.1', () => {
    expect(config.port).toBe(3000);
    expect(config.host).toBe('127.0.0.1');
  });

  it('DATABASE_URL sqlite:data/auth.db', () => {
    expect(config.database).toEqual({ kind: 'sqlite', path: 'data/auth.db' });
  });

  it('PASSWORD_MIN_LENGTH 8, MAIL_FROM no-reply@localhost', () => {
    expect(config.passwordMinLength).toBe(8);
    expect(config.mailFrom).toBe('no-reply@localhost');
  });

  it('LOG_LEVEL info, DATABASE_POOL_SIZE 10', () => {
    expect(config.logLevel).toBe('info');
    expect(config.databasePoolSize).toBe(10);
  });

  it('REDIS_URL, SMTP_URL and APP_SECRET (for SQLite) unset; TRUST_PROXY off', () => {
    expect(config.redisUrl).toBeUndefined();
    expect(config.redisPrefix).toBe('');
    expect(config.smtpUrl).toBeUndefined();
    expect(config.appSecret).toBeUndefined();
    expect(config.trustProxy).toBe(false);
    expect(config.corsOrigins).toEqual([]);
  });

  it('PUBLIC_URL http://127.0.0.1:$PORT, without a trailing slash', () => {
    expect(config.publicUrl).toBe('http://127.0.0.1:3000');
    expect(loadConfig({ PORT: '8080' }).publicUrl).toBe('http://127.0.0.1:8080');
  });
});

describe('loadConfig: values given', () => {
  it('takes every variable', () => {
    const config = loadConfig({
      PORT: '4000',
      HOST: '0.0.0.0',
      DATABASE_URL: POSTGRES,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: 'staging:',
      APP_SECRET: SECRET,
      PASSWORD_MIN_LENGTH: '15',
      SMTP_URL: 'smtps://user:pass@mail.example.test:465',
      MAIL_FROM: 'Accounts <accounts@example.test>',
      PUBLIC_URL: 'https://auth.example.test',
      DATABASE_STATEMENT_TIMEOUT_SET_BY: 'role',
      UV_THREADPOOL_SIZE: '3',
      LOG_LEVEL: 'trace',
      DATABASE_POOL_SIZE: '25',
    });
    expect(config).toMatchObject({
      port: 4000,
      host: '0.0.0.0',
      database: { kind: 'postgres', url: POSTGRES },
      redisUrl: 'redis://127.0.0.1:6379',
      redisPrefix: 'staging:',
      appSecret: SECRET,
      passwordMinLength: 15,
      smtpUrl: 'smtps://user:pass@mail.example.test:465',
      mailFrom: 'Accounts <accounts@example.test>',
      publicUrl: 'https://auth.example.test',
      statementTimeoutSetBy: 'role',
      threadPoolSize: 3,
      logLevel: 'trace',
      databasePoolSize: 25,
    });
  });

  it('sqlite:<path> gives the path', () => {
    expect(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/auth/auth.db' }).database).toEqual({
      kind: 'sqlite',
      path: '/var/lib/auth/auth.db',
    });
  });

  it('PUBLIC_URL: the trailing slash is removed', () => {
    expect(loadConfig({ PUBLIC_URL: 'https://auth.example.test/' }).publicUrl).toBe(
      'https://auth.example.test',
    );
    expect(loadConfig({ PUBLIC_URL: 'https://example.test/auth//' }).publicUrl).toBe(
      'https://example.test/auth',
    );
  });

  it('TRUST_PROXY: true, false, or a comma-separated list of addresses/CIDRs', () => {
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.1' }).trustProxy).toEqual(['10.0.0.1']);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.1 ,::1,fd00::/8' }).trustProxy).toEqual(
      ['10.0.0.0/8', '192.168.1.1', '::1', 'fd00::/8'],
    );
  });

  it('CORS_ORIGINS: * or a comma-separated list of origins as browsers send them', () => {
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toBe('*');
    expect(
      loadConfig({ CORS_ORIGINS: 'https://app.example.test, http://localhost:5173' }).corsOrigins,
    ).toEqual(['https://app.example.test', 'http://localhost:5173']);
    for (const bad of [
      'app.example.test', // no scheme
      'https://app.example.test/', // a path: never an Origin
      'https://App.example.test', // browsers send lower case
      'ftp://app.example.test',
      'https://app.example.test,',
    ])
      expectConfigError({ CORS_ORIGINS: bad }, /CORS_ORIGINS/);
  });

  it('PASSWORD_MIN_LENGTH may be raised, e.g. to 15', () => {
    expect(loadConfig({ PASSWORD_MIN_LENGTH: '15' }).passwordMinLength).toBe(15);
  });

  it('APP_SECRET of at least 32 bytes is taken for SQLite too', () => {
    expect(loadConfig({ APP_SECRET: SECRET }).appSecret).toBe(SECRET);
  });
});

describe('loadConfig: bad values throw a ConfigError with a clear message', () => {
  it('PORT=abc', () => expectConfigError({ PORT: 'abc' }, /PORT/));
  it('DATABASE_STATEMENT_TIMEOUT_SET_BY=pgbouncer', () =>
    expectConfigError(
      { DATABASE_STATEMENT_TIMEOUT_SET_BY: 'pgbouncer' },
      /DATABASE_STATEMENT_TIMEOUT_SET_BY must be service or role/,
    ));
  it('PORT=70000', () => expectConfigError({ PORT: '70000' }, /PORT.*65535/));
  it('UV_THREADPOOL_SIZE=abc, 0 and 1025 (libuv would take 1, 1 and 1024 threads)', () => {
    for (const size of ['abc', '0', '1025', '2.5'])
      expectConfigError({ UV_THREADPOOL_SIZE: size }, /UV_THREADPOOL_SIZE/);
  });
  it('PORT=-1 and PORT=3000.5', () => {
    expectConfigError({ PORT: '-1' }, /PORT/);
    expectConfigError({ PORT: '3000.5' }, /PORT/);
  });

  it('DATABASE_URL=mysql://x', () =>
    expectConfigError({ DATABASE_URL: 'mysql://x' }, /DATABASE_URL.*(sqlite|postgres)/));

  it('PostgreSQL without APP_SECRET', () =>
    expectConfigError({ DATABASE_URL: POSTGRES }, /APP_SECRET.*required/i));

  it('APP_SECRET shorter than 32 bytes', () => {
    expectConfigError({ DATABASE_URL: POSTGRES, APP_SECRET: 'k'.repeat(31) }, /APP_SECRET.*32/);
    expectConfigError({ APP_SECRET: 'short' }, /APP_SECRET.*32/);
  });

  it('SMTP_URL or REDIS_URL without a host (their clients would quietly use localhost)', () => {
    for (const value of ['smtp://', 'smtps:', 'smtp://user:pass@'])
      expectConfigError({ SMTP_URL: value }, /SMTP_URL/);
    expectConfigError({ REDIS_URL: 'redis://' }, /REDIS_URL.*host/);
  });

  it('SMTP_URL or REDIS_URL whose host no client accepts (a space, a slash, percent-encoded)', () => {
    for (const host of ['mail%20relay.example.test', 'mail%2Frelay', 'a%00b'])
      expectConfigError({ SMTP_URL: `smtp://user:pw@${host}:587` }, /SMTP_URL.*host/);
    expectConfigError({ REDIS_URL: 'redis://cache%20one:6379' }, /REDIS_URL.*host/);
    for (const host of ['mail.example.test', '[::1]', '127.0.0.1', 'xn--bcher-kva.example'])
      expect(loadConfig({ SMTP_URL: `smtp://${host}:25` }).smtpUrl).toBe(`smtp://${host}:25`);
  });

  it('REDIS_URL whose path is no database number', () => {
    expectConfigError({ REDIS_URL: 'redis://127.0.0.1:6379/sessions' }, /REDIS_URL.*database/);
    expectConfigError({ REDIS_URL: 'redis://127.0.0.1:6379/1/2' }, /REDIS_URL.*database/);
    for (const path of ['', '/', '/0', '/15'])
      expect(loadConfig({ REDIS_URL: `redis://127.0.0.1:6379${path}` }).redisUrl).toBeDefined();
  });

  it('MAIL_FROM with a line break (it would start another header of every e-mail)', () =>
    expectConfigError({ MAIL_FROM: 'Accounts\r\nBcc: x@evil.test <a@example.test>' }, /MAIL_FROM/));

  it('MAIL_FROM that is no e-mail address', () => {
    for (const value of ['accounts', 'Accounts <accounts>', 'a@b@c'])
      expectConfigError({ MAIL_FROM: value }, /MAIL_FROM/);
  });

  it('LOG_LEVEL that is no pino level', () => {
    for (const level of ['verbose', 'INFO', 'warning'])
      expectConfigError({ LOG_LEVEL: level }, /LOG_LEVEL/);
  });

  it('DATABASE_POOL_SIZE=0 or abc', () => {
    expectConfigError({ DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE/);
    expectConfigError({ DATABASE_POOL_SIZE: 'abc' }, /DATABASE_POOL_SIZE/);
  });

  it('a variable set but empty (spaces only), instead of taking its default', () => {
    for (const name of ['PORT', 'HOST', 'DATABASE_URL', 'MAIL_FROM', 'LOG_LEVEL', 'SMTP_URL'])
      expectConfigError({ [name]: '  ' }, new RegExp(`${name} is set but empty`));
  });

  it('PASSWORD_MIN_LENGTH=4 (below the default minimum of 8)', () =>
    expectConfigError({ PASSWORD_MIN_LENGTH: '4' }, /PASSWORD_MIN_LENGTH/));

  it('PASSWORD_MIN_LENGTH=abc', () =>
    expectConfigError({ PASSWORD_MIN_LENGTH: 'abc' }, /PASSWORD_MIN_LENGTH/));

  it('SMTP_URL=http://x', () => expectConfigError({ SMTP_URL: 'http://x' }, /SMTP_URL.*smtp/));

  it('REDIS_PREFIX with a space, over 64 characters, or without REDIS_URL', () => {
    const redis = { REDIS_URL: 'redis://127.0.0.1:6379' };
    expectConfigError({ ...redis, REDIS_PREFIX: 'my app:' }, /REDIS_PREFIX must be/);
    expectConfigError({ ...redis, REDIS_PREFIX: 'a'.repeat(65) }, /REDIS_PREFIX must be/);
    expectConfigError({ REDIS_PREFIX: 'staging:' }, /REDIS_PREFIX is set but REDIS_URL is not/);
  });

  it('REDIS_URL=http://x', () => expectConfigError({ REDIS_URL: 'http://x' }, /REDIS_URL.*redis/));

  it('TRUST_PROXY=notanip', () => expectConfigError({ TRUST_PROXY: 'notanip' }, /TRUST_PROXY/));

  it('TRUST_PROXY with one bad entry or prefix', () => {
    expectConfigError({ TRUST_PROXY: '10.0.0.1, nope' }, /TRUST_PROXY.*nope/);
    expectConfigError({ TRUST_PROXY: '10.0.0.0/33' }, /TRUST_PROXY/);
  });

  it('TRUST_PROXY with a /0 range (every address): a clear message, not a crash in Fastify', () => {
    for (const value of ['0.0.0.0/0', '::/0', '10.0.0.1, 10.0.0.0/0'])
      expectConfigError({ TRUST_PROXY: value }, /TRUST_PROXY.*\/0.*TRUST_PROXY=true/);
  });

  it('PUBLIC_URL=ftp://x', () => expectConfigError({ PUBLIC_URL: 'ftp://x' }, /PUBLIC_URL/));

  it('PUBLIC_URL that is not a URL', () =>
    expectConfigError({ PUBLIC_URL: 'auth.example.test' }, /PUBLIC_URL/));

  it('PUBLIC_URL with a user name, password, query or fragment (tokens, e-mails and /openapi.json show it)', () => {
    for (const value of [
      'https://admin:PubSecretPw@auth.example.test',
      'https://admin@auth.example.test',
      'https://auth.example.test/?x=1',
      'https://auth.example.test/#frag',
      'https://auth.example.test/?',
    ]) {
      const message = errorMessageOf({ PUBLIC_URL: value });
      expect(message).toMatch(/PUBLIC_URL/);
      expect(message).not.toMatch(/PubSecretPw|admin/);
    }
  });

  it('PORT=0 without PUBLIC_URL (the address clients reach is not known)', () => {
    expectConfigError({ PORT: '0' }, /PUBLIC_URL.*PORT=0/);
    expect(loadConfig({ PORT: '0', PUBLIC_URL: 'https://auth.example.test' }).port).toBe(0);
  });

  it('DATABASE_URL=sqlite://data/auth.db (a host, or /data/auth.db?)', () =>
    expectConfigError({ DATABASE_URL: 'sqlite://data/auth.db' }, /sqlite:data\/auth\.db/));
});
