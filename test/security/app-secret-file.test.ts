import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { resolveAppSecret } from '../../src/security/server-keys.js';

/** SQLite without APP_SECRET: the secret generated into data/app-secret on first start. */
describe('the generated app-secret file', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const configIn = () => {
    const dir = mkdtempSync(join(tmpdir(), 'app-secret-'));
    dirs.push(dir);
    return { dir, config: loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'data', 'auth.db')}` }) };
  };

  it('is created owner-only, whole, under its own name only, and read back the same ever after', () => {
    const { dir, config } = configIn();
    const secret = resolveAppSecret(config);
    const file = join(dir, 'data', 'app-secret');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`);
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);
    expect(readdirSync(join(dir, 'data'))).toEqual(['app-secret']); // no temporary left
    expect(resolveAppSecret(config)).toBe(secret);
  });

  it('an empty one (a crash before it was written: nothing was sealed with it) is replaced', () => {
    const { dir, config } = configIn();
    resolveAppSecret(config);
    const file = join(dir, 'data', 'app-secret');
    writeFileSync(file, '');
    const secret = resolveAppSecret(config);
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(32);
    expect(readFileSync(file, 'utf8')).toBe(`${secret}\n`);
    expect(readdirSync(join(dir, 'data'))).toEqual(['app-secret']);
  });

  it('one with too short a secret in it stops the start, saying so', () => {
    const { dir, config } = configIn();
    resolveAppSecret(config);
    writeFileSync(join(dir, 'data', 'app-secret'), 'short\n');
    expect(() => resolveAppSecret(config)).toThrow(/app-secret must hold at least 32 bytes/);
  });
});
