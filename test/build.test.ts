import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `npm start` compiles only when dist/ is not up to date with src/ (scripts/build.mjs). This runs
// the real script on a copy of the repository's build settings with a two-file src/, so each
// compile takes a second rather than the whole service's ten. (No database: not per backend.)

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('the build (scripts/build.mjs)', () => {
  let dir: string;
  const write = (path: string, text: string) => {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  /** Runs the build; true when it compiled. */
  const build = () =>
    execFileSync(process.execPath, [join(dir, 'scripts/build.mjs')], { encoding: 'utf8' }).includes(
      'built dist/',
    );

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'build-test-'));
    for (const file of [
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'scripts/build.mjs',
    ]) {
      cpSync(join(ROOT, file), join(dir, file));
    }
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    write('src/main.cts', "console.log('first');\n");
    write('src/removed.ts', 'export const removed = 1;\n');
    write('src/security/common-passwords.txt', 'header\npassword\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("on a Node older than 22.12 stops with the service's one line, before compiling", () => {
    const pretend = join(dir, 'pretend-20.cjs');
    writeFileSync(
      pretend,
      `Object.defineProperty(process.versions, 'node', { value: '20.19.0' });
       Object.defineProperty(process, 'version', { value: 'v20.19.0' });`,
    );
    const refused = spawnSync(
      process.execPath,
      ['--require', pretend, join(dir, 'scripts/build.mjs')],
      { encoding: 'utf8' },
    );
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      'Node v20.19.0 is too old: the service runs on Node 22.12+, 24 or 26 (README, Run it).\n',
    );
    expect(existsSync(join(dir, 'dist'))).toBe(false);
  });

  it('compiles a fresh checkout, with the assets the service reads beside its modules', () => {
    expect(build()).toBe(true);
    expect(existsSync(join(dir, 'dist/main.cjs'))).toBe(true);
    expect(existsSync(join(dir, 'dist/removed.js'))).toBe(true);
    expect(readFileSync(join(dir, 'dist/security/common-passwords.txt'), 'utf8')).toContain(
      'password',
    );
  });

  it('does not compile again while the sources are unchanged, whatever their times say', () => {
    expect(build()).toBe(false);
    const future = new Date(Date.now() + 3_600_000);
    utimesSync(join(dir, 'src/main.cts'), future, future); // e.g. a fresh checkout of the same commit
    expect(build()).toBe(false);
  });

  it('compiles again when a source changes, and leaves nothing of a deleted one', () => {
    write('src/main.cts', "console.log('second');\n");
    rmSync(join(dir, 'src/removed.ts'));
    expect(build()).toBe(true);
    expect(readFileSync(join(dir, 'dist/main.cjs'), 'utf8')).toContain('second');
    expect(existsSync(join(dir, 'dist/removed.js'))).toBe(false);
    expect(build()).toBe(false);
  });

  it('compiles again when the compiler settings change', () => {
    const settings = JSON.parse(readFileSync(join(dir, 'tsconfig.build.json'), 'utf8'));
    write(
      'tsconfig.build.json',
      JSON.stringify({
        ...settings,
        compilerOptions: { ...settings.compilerOptions, sourceMap: false },
      }),
    );
    expect(build()).toBe(true);
    expect(existsSync(join(dir, 'dist/main.cjs.map'))).toBe(false);
  });
});

describe('the build without TypeScript (an install without dev dependencies)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'build-prod-'));
    cpSync(join(ROOT, 'scripts/build.mjs'), join(dir, 'scripts/build.mjs'));
    mkdirSync(join(dir, 'node_modules'));
    mkdirSync(join(dir, 'src'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = () => {
    try {
      execFileSync(process.execPath, [join(dir, 'scripts/build.mjs')], { stdio: 'pipe' });
      return { status: 0, stderr: '' };
    } catch (error) {
      const failed = error as { status: number; stderr: Buffer };
      return { status: failed.status, stderr: String(failed.stderr) };
    }
  };

  it('refuses to start with no dist/ built, and says what to run', () => {
    const { status, stderr } = run();
    expect(status).toBe(1);
    expect(stderr).toMatch(/TypeScript is not installed.*dist\/ is not built: run npm install/);
  });

  it('starts dist/ as built: npm start need not compile in production', () => {
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist/.build-fingerprint'), 'abc\n');
    expect(run().status).toBe(0);
  });
});
