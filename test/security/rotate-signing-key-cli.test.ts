import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

// The operators' commands, run as `npm run migrate` and `npm run rotate-signing-key` run them (the
// compiled files; here the sources through tsx), in a fresh working directory: the default
// configuration keeps its SQLite database under ./data.

const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const source = (path: string) => fileURLToPath(new URL(`../../src/${path}`, import.meta.url));
const ROTATE = source('security/rotate-signing-key-cli.ts');
const MIGRATE = source('db/migrate-cli.ts');

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function run(entry: string, args: string[], env: Record<string, string> = {}) {
  const cwd = mkdtempSync(join(tmpdir(), 'operator-cli-'));
  dirs.push(cwd);
  const result = spawnSync(process.execPath, ['--import', TSX_LOADER, entry, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { ...result, lines: result.stderr.split('\n').filter((l) => l !== ''), cwd };
}

describe('npm run rotate-signing-key', () => {
  it('refuses any argument but --prune-only with a usage line, and adds no key', () => {
    for (const args of [['--help'], ['--prune'], ['--prune-only', 'extra']]) {
      const result = run(ROTATE, args);
      expect([args, result.status, result.lines]).toEqual([
        args,
        2,
        ['usage: npm run rotate-signing-key [-- --prune-only]'],
      ]);
      expect(existsSync(join(result.cwd, 'data'))).toBe(false);
    }
  }, 60_000);

  it('says so when --prune-only finds nothing to delete', () => {
    const result = run(ROTATE, ['--prune-only']);
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe('no retired signing key to delete');
  }, 30_000);
});

describe('the operator commands with a bad configuration value', () => {
  it('exit with code 1 and one stderr line starting with "configuration error:"', () => {
    for (const entry of [ROTATE, MIGRATE]) {
      const result = run(entry, [], { PORT: 'abc' });
      expect([entry, result.status]).toEqual([entry, 1]);
      expect(result.lines).toHaveLength(1);
      expect(result.lines[0]).toMatch(/^configuration error: .*PORT/);
    }
  }, 60_000);
});
