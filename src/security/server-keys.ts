import { hkdfSync, randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { Config } from '../config.js';

/** Keys derived from APP_SECRET, one per use, so that no key serves two purposes. */
export interface ServerKeys {
  readonly codeHmac: Buffer;
  readonly refreshToken: Buffer;
  readonly secretBox: Buffer;
  /** Signs paging cursors (http/cursor.ts). */
  readonly cursorHmac: Buffer;
  /** Keys the digests of chat message texts (chat/message-text.ts). */
  readonly messageDigest: Buffer;
}

export function deriveServerKeys(appSecret: string): ServerKeys {
  const derive = (purpose: string) => Buffer.from(hkdfSync('sha256', appSecret, '', purpose, 32));
  return {
    codeHmac: derive('one-time-code hmac v1'),
    refreshToken: derive('refresh-token derivation v1'),
    secretBox: derive('secret box v1'),
    cursorHmac: derive('paging cursor hmac v1'),
    messageDigest: derive('chat message text digest v1'),
  };
}

/**
 * APP_SECRET when configured; otherwise (SQLite only, enforced by config) a secret generated on
 * first start into `app-secret` beside the database file, readable by the owner only.
 */
export function resolveAppSecret(config: Config): string {
  if (config.appSecret !== undefined) return config.appSecret;
  if (config.database.kind !== 'sqlite') throw new Error('APP_SECRET is required with PostgreSQL');
  if (config.database.path === ':memory:') return randomBytes(32).toString('base64url');
  const file = join(dirname(config.database.path), 'app-secret');
  mkdirSync(dirname(file), { recursive: true });
  if (!existsSync(file) || statSync(file).size === 0) createSecretFile(file);
  const secret = readFileSync(file, 'utf8').trim();
  if (Buffer.byteLength(secret) < 32) throw new Error(`${file} must hold at least 32 bytes`);
  return secret;
}

/**
 * Writes a new secret durably before anything is sealed with it: written and flushed under a
 * temporary name, then linked into place (two instances starting at once: the first link wins and
 * both read it), and the directory flushed. Written in place, a crash could leave an empty file
 * (the service then refused to start), and a power cut could lose the secret after the database
 * had flushed what was sealed with it. An empty file (such a crash, before anything could use it)
 * is replaced.
 */
function createSecretFile(file: string): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(temporary, 'wx', 0o600);
  try {
    writeSync(fd, randomBytes(32).toString('base64url') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (existsSync(file) && statSync(file).size === 0) renameSync(temporary, file);
    else linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(temporary, { force: true });
  }
  flushDirectory(dirname(file));
}

/** Makes a new name in `dir` durable (POSIX); where a directory cannot be opened, nothing to do. */
function flushDirectory(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, 'r');
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
