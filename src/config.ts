import { isIP } from 'node:net';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH_DEFAULT } from './security/password-policy.js';

/** Every setting of the service, parsed and validated once at start-up (API.md, Configuration). */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly database: DatabaseLocation;
  /** PostgreSQL connections per instance. */
  readonly databasePoolSize: number;
  /**
   * Who sets PostgreSQL's `statement_timeout`: the service, on each connection it opens (the
   * default), or the database role's own setting (PgBouncer refuses the startup parameter).
   */
  readonly statementTimeoutSetBy: 'service' | 'role';
  readonly redisUrl: string | undefined;
  /** Put before every Redis key and channel: several deployments may share one Redis. */
  readonly redisPrefix: string;
  /** Undefined only for SQLite, where the secret is generated into the data directory. */
  readonly appSecret: string | undefined;
  readonly passwordMinLength: number;
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string;
  readonly trustProxy: boolean | string[];
  /**
   * Web origins whose pages may call the API from a browser (CORS), as `scheme://host[:port]`;
   * `'*'`: any; empty: none (the default: same-origin pages, and apps that are not browsers).
   */
  readonly corsOrigins: '*' | readonly string[];
  /** No trailing slash; the tokens' `iss` and `aud`. */
  readonly publicUrl: string;
  readonly logLevel: string;
  /**
   * libuv's thread pool, where passwords are hashed: one thread per core unless set (main.cts);
   * undefined, libuv's default of 4. The hasher sizes its slots by it. libuv reads the variable
   * itself, and would take "abc" as 1 thread; so a value that is not a whole number from 1 to
   * 1024 stops the start.
   */
  readonly threadPoolSize: number | undefined;
}

export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Readonly<Record<string, string | undefined>>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * `loadConfig` for a process entry (the server, the CLIs): a bad value ends the process with one
 * stderr line, `configuration error: …`, and exit code 1.
 */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const port = parsePort(env.PORT);
  const database = parseDatabaseUrl(env.DATABASE_URL ?? 'sqlite:data/auth.db');
  const appSecret = parseAppSecret(env.APP_SECRET, database);
  return Object.freeze({
    port,
    host: nonEmpty('HOST', env.HOST) ?? '127.0.0.1',
    database,
    databasePoolSize: parsePoolSize(env.DATABASE_POOL_SIZE),
    statementTimeoutSetBy: parseStatementTimeoutSetBy(env.DATABASE_STATEMENT_TIMEOUT_SET_BY),
    redisUrl: parseRedisUrl(env.REDIS_URL),
    redisPrefix: parseRedisPrefix(env.REDIS_PREFIX, env.REDIS_URL),
    appSecret,
    passwordMinLength: parsePasswordMinLength(env.PASSWORD_MIN_LENGTH),
    smtpUrl: parseUrl('SMTP_URL', env.SMTP_URL, ['smtp:', 'smtps:'], { host: true }),
    mailFrom: parseMailFrom(env.MAIL_FROM),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    corsOrigins: parseCorsOrigins(env.CORS_ORIGINS),
    publicUrl: parsePublicUrl(env.PUBLIC_URL, port),
    logLevel: parseLogLevel(env.LOG_LEVEL),
    threadPoolSize: parseThreadPoolSize(env.UV_THREADPOOL_SIZE),
  });
}

function nonEmpty(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.trim() === '') throw new ConfigError(`${name} is set but empty`);
  return value.trim();
}

function parseInteger(name: string, value: string, min: number, max: number): number {
  if (!/^\d+$/.test(value)) throw new ConfigError(`${name} must be a whole number, got "${value}"`);
  const n = Number(value);
  if (n < min || n > max)
    throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function parsePort(value: string | undefined): number {
  const raw = nonEmpty('PORT', value);
  return raw === undefined ? 3000 : parseInteger('PORT', raw, 0, 65535);
}

function parseDatabaseUrl(value: string): DatabaseLocation {
  const raw = nonEmpty('DATABASE_URL', value) ?? '';
  if (raw.startsWith('sqlite:')) {
    // sqlite://data/auth.db reads as a host `data` to some and as /data/auth.db to others.
    if (/^sqlite:\/\/(?!\/)/.test(raw))
      throw new ConfigError(
        'DATABASE_URL: write sqlite:<relative path> (sqlite:data/auth.db) or sqlite:///<absolute path>',
      );
    const path = raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (path === '')
      throw new ConfigError('DATABASE_URL sqlite: needs a file path, e.g. sqlite:data/auth.db');
    return { kind: 'sqlite', path };
  }
  if (raw.startsWith('postgres://') || raw.startsWith('postgresql://')) {
    parseUrl('DATABASE_URL', raw, ['postgres:', 'postgresql:']);
    return { kind: 'postgres', url: raw };
  }
  throw new ConfigError('DATABASE_URL must start with sqlite: or postgres://');
}

function parseAppSecret(value: string | undefined, database: DatabaseLocation): string | undefined {
  const raw = nonEmpty('APP_SECRET', value);
  if (raw === undefined) {
    if (database.kind === 'postgres') {
      throw new ConfigError(
        'APP_SECRET is required with PostgreSQL (at least 32 bytes, shared by every instance)',
      );
    }
    return undefined;
  }
  if (Buffer.byteLength(raw, 'utf8') < 32)
    throw new ConfigError('APP_SECRET must be at least 32 bytes long');
  return raw;
}

function parsePoolSize(value: string | undefined): number {
  const raw = nonEmpty('DATABASE_POOL_SIZE', value);
  return raw === undefined ? 10 : parseInteger('DATABASE_POOL_SIZE', raw, 1, 1000);
}

function parseThreadPoolSize(value: string | undefined): number | undefined {
  const raw = nonEmpty('UV_THREADPOOL_SIZE', value);
  // libuv's own bounds: it caps the pool at 1024 threads.
  return raw === undefined ? undefined : parseInteger('UV_THREADPOOL_SIZE', raw, 1, 1024);
}

function parseStatementTimeoutSetBy(value: string | undefined): 'service' | 'role' {
  const raw = nonEmpty('DATABASE_STATEMENT_TIMEOUT_SET_BY', value) ?? 'service';
  if (raw === 'service' || raw === 'role') return raw;
  throw new ConfigError(`DATABASE_STATEMENT_TIMEOUT_SET_BY must be service or role, got "${raw}"`);
}

function parsePasswordMinLength(value: string | undefined): number {
  const raw = nonEmpty('PASSWORD_MIN_LENGTH', value);
  if (raw === undefined) return PASSWORD_MIN_LENGTH_DEFAULT;
  return parseInteger('PASSWORD_MIN_LENGTH', raw, PASSWORD_MIN_LENGTH_DEFAULT, PASSWORD_MAX_LENGTH);
}

/** `host`: the URL must name a host (for SMTP and Redis: their clients default to localhost). */
function parseUrl(
  name: string,
  value: string | undefined,
  protocols: string[],
  required: { host?: boolean } = {},
): string | undefined {
  const raw = nonEmpty(name, value);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} is not a valid URL`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(`${name} must use ${protocols.map((p) => p + '//').join(' or ')}`);
  }
  if (required.host === true && !namesHost(url))
    throw new ConfigError(`${name} must name a host, e.g. ${protocols[0]}//host:port`);
  return raw;
}

/**
 * Whether the URL names a host its client can reach. `smtp:` and `redis:` URLs are not special
 * to the URL standard, so `new URL` takes any text for their host (`mail%20relay`); read as a web
 * address's host, it is decoded and checked as a client reads it (nodemailer refused such a
 * host at start, with a stack that printed the URL, password included).
 */
function namesHost(url: URL): boolean {
  if (url.hostname === '') return false;
  try {
    return new URL(`http://${url.host}`).hostname !== '';
  } catch {
    return false;
  }
}

/** `REDIS_URL`: its path, if any, is a database number (ioredis sent `SELECT NaN` for `/sessions`). */
function parseRedisUrl(value: string | undefined): string | undefined {
  const raw = parseUrl('REDIS_URL', value, ['redis:', 'rediss:'], { host: true });
  if (raw !== undefined && !/^\/?\d*$/.test(new URL(raw).pathname))
    throw new ConfigError(
      'REDIS_URL: its path must be a database number, e.g. redis://host:6379/0',
    );
  return raw;
}

function parseMailFrom(value: string | undefined): string {
  const raw = nonEmpty('MAIL_FROM', value) ?? 'no-reply@localhost';
  const address = /^[^@\s]+@[^@\s]+$/.test(raw) || /<[^@\s<>]+@[^@\s<>]+>$/.test(raw);
  // A line break would start another header of every e-mail.
  if (!address || /\p{Cc}/u.test(raw)) {
    throw new ConfigError(`MAIL_FROM must be an e-mail address, got "${raw}"`);
  }
  return raw;
}

function parseTrustProxy(value: string | undefined): boolean | string[] {
  const raw = nonEmpty('TRUST_PROXY', value);
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  const entries = raw.split(',').map((s) => s.trim());
  for (const entry of entries) {
    const [address, prefix, extra] = entry.split('/');
    const family = isIP(address ?? '');
    const prefixOk =
      prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(
        `TRUST_PROXY must be true or a comma-separated list of IP addresses/CIDRs, got "${entry}"`,
      );
    }
    // Fastify's address matcher refuses /0 when the server is built, with a stack trace.
    if (Number(prefix) === 0 && prefix !== undefined) {
      throw new ConfigError(
        `TRUST_PROXY "${entry}": a /0 range is every address; write TRUST_PROXY=true for that`,
      );
    }
  }
  return entries;
}

/**
 * `*`, or a comma-separated list of origins, each as a browser sends it in `Origin`: `https://` or
 * `http://`, a host, maybe a port, nothing more (a path or a trailing slash would never match).
 */
function parseCorsOrigins(value: string | undefined): '*' | readonly string[] {
  const raw = nonEmpty('CORS_ORIGINS', value);
  if (raw === undefined) return [];
  if (raw === '*') return '*';
  return raw.split(',').map((entry) => {
    const origin = entry.trim();
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (url === undefined || !['http:', 'https:'].includes(url.protocol) || url.origin !== origin)
      throw new ConfigError(
        `CORS_ORIGINS must be * or a comma-separated list of origins such as https://app.example.com (scheme, host, port; lower case; no path), got "${origin}"`,
      );
    return origin;
  });
}

/**
 * The service's address as clients reach it: in tokens (`iss`, `aud`), e-mails and the public
 * OpenAPI document, so a user name, password, query or fragment in it would be published (and a
 * fragment would break every link built on it). Never echoed: it may hold a password.
 */
function parsePublicUrl(value: string | undefined, port: number): string {
  const raw = parseUrl('PUBLIC_URL', value, ['http:', 'https:']);
  if (raw === undefined) {
    if (port === 0)
      throw new ConfigError('PUBLIC_URL is required with PORT=0 (the port is chosen at start)');
    return `http://127.0.0.1:${port}`;
  }
  const url = new URL(raw);
  if (url.username !== '' || url.password !== '')
    throw new ConfigError('PUBLIC_URL must not contain a user name or password');
  if (url.search !== '' || url.hash !== '' || /[?#]/.test(raw))
    throw new ConfigError('PUBLIC_URL must not contain a query (?) or fragment (#)');
  return raw.replace(/\/+$/, '');
}

const REDIS_PREFIX = /^[A-Za-z0-9._:-]{1,64}$/;

function parseRedisPrefix(value: string | undefined, redisUrl: string | undefined): string {
  const raw = nonEmpty('REDIS_PREFIX', value);
  if (raw === undefined) return '';
  if (!REDIS_PREFIX.test(raw))
    throw new ConfigError(
      `REDIS_PREFIX must be 1-64 letters, digits and . _ : - (e.g. "staging:"), got "${raw.slice(0, 80)}"`,
    );
  if (redisUrl === undefined) throw new ConfigError('REDIS_PREFIX is set but REDIS_URL is not');
  return raw;
}

function parseLogLevel(value: string | undefined): string {
  const raw = nonEmpty('LOG_LEVEL', value) ?? 'info';
  if (!LOG_LEVELS.includes(raw))
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  return raw;
}
