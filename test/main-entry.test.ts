import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// src/main.cts must size libuv's pool before anything starts it. The tests run the service through
// tsx's --import hook, which starts the pool first, so this compiles the entry as `npm run build`
// does and runs it under plain node with a stand-in server.js that starts the pool and counts the
// process's threads (Linux /proc).

const canCountThreads = existsSync('/proc/self/task');
if (!canCountThreads) console.warn('no /proc/self/task: skipping test/main-entry.');

/** Starts the pool with an async fs call, then prints the pool size it was given and the threads. */
const STAND_IN_SERVER = `
require('node:fs').readFile(__filename, () => {
  const threads = require('node:fs').readdirSync('/proc/self/task').length;
  console.log(JSON.stringify({ pool: process.env.UV_THREADPOOL_SIZE ?? null, threads }));
});
`;

describe.skipIf(!canCountThreads)('the process entry (src/main.cts, compiled)', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'main-entry-'));
    const source = readFileSync(new URL('../src/main.cts', import.meta.url), 'utf8');
    const { outputText } = ts.transpileModule(source, {
      fileName: 'main.cts',
      compilerOptions: { module: ts.ModuleKind.NodeNext, target: ts.ScriptTarget.ES2022 },
    });
    writeFileSync(join(dir, 'main.cjs'), outputText);
    writeFileSync(join(dir, 'server.js'), STAND_IN_SERVER);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function run(file: string, pool?: string): { pool: string | null; threads: number } {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
    if (pool !== undefined) env.UV_THREADPOOL_SIZE = pool;
    const result = spawnSync(process.execPath, [join(dir, file)], { env, encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as { pool: string | null; threads: number };
  }

  /** Runs the entry as if on Node `version`. */
  function runAs(version: string) {
    const pretend = join(dir, `pretend-${version}.cjs`);
    writeFileSync(
      pretend,
      `Object.defineProperty(process.versions, 'node', { value: '${version}' });
       Object.defineProperty(process, 'version', { value: 'v${version}' });`,
    );
    const args = ['--require', pretend, join(dir, 'main.cjs')];
    return spawnSync(process.execPath, args, { env: { PATH: process.env.PATH }, encoding: 'utf8' });
  }

  it('stops with one line on a Node older than 22.12, and starts on 22.12', () => {
    for (const version of ['20.19.0', '22.3.0', '22.11.0']) {
      const refused = runAs(version);
      expect(refused.status).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toBe(
        `Node v${version} is too old: the service runs on Node 22.12+, 24 or 26 (README, Run it).\n`,
      );
    }
    expect(runAs('22.12.0').status).toBe(0);
  });

  it('starts libuv with one pool thread per core (as many threads as an explicit setting gives)', () => {
    const cores = String(availableParallelism());
    const viaEntry = run('main.cjs');
    const explicit = run('server.js', cores);
    expect(viaEntry.pool).toBe(cores);
    expect(viaEntry.threads).toBe(explicit.threads);
    if (cores !== '4') expect(viaEntry.threads).not.toBe(run('server.js').threads); // default: 4
  });

  it("respects the operator's own UV_THREADPOOL_SIZE", () => {
    const viaEntry = run('main.cjs', '3');
    expect(viaEntry.pool).toBe('3');
    expect(viaEntry.threads).toBe(run('server.js', '3').threads);
  });
});
