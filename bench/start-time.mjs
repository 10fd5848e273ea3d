/* global fetch, performance */
// `npm run bench:start`: how long `npm start` takes, from spawning the command to the first
// successful GET /healthz, on an unchanged checkout with an existing SQLite database (one warm-up
// run creates it and, if needed, the build; it is not counted). Also the CPU time the command's
// processes used by then (Linux /proc), which a loaded machine inflates far less than wall time.
//
//   npm run bench:start                     7 runs of `npm start`
//   npm run bench:start -- --runs 15
//   npm run bench:start -- --command "node dist/main.cjs"
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { freePort, sleep } from './server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const POLL_MS = 5;
/** USER_HZ: /proc reports CPU times in these ticks (100 on every mainstream Linux). */
const TICKS_PER_SECOND = 100;
const TIMEOUT_MS = 120_000;

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    command: { type: 'string', default: 'npm start' },
  },
});

/** CPU milliseconds used so far by a process group, exited children included (0 without /proc). */
function groupCpuMs(pgid) {
  if (!existsSync('/proc/self/stat')) return 0;
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // Fields after the command name (which may hold spaces): state ppid pgrp … utime stime cutime cstime
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) !== pgid) continue;
    ticks += fields.slice(11, 15).reduce((sum, value) => sum + Number(value), 0);
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** Wall and CPU milliseconds from spawn to the first 200 from /healthz; then the group is stopped. */
async function timeOneStart(env) {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(args.command, {
    cwd: ROOT,
    shell: true,
    detached: true, // its own process group: npm, sh and node stop together
    stdio: 'ignore',
    env: { ...env, PORT: String(port) },
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    while (performance.now() - started < TIMEOUT_MS) {
      if (child.exitCode !== null) throw new Error(`"${args.command}" exited ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (response) => response.ok,
        () => false,
      );
      if (ok) return { wall: performance.now() - started, cpu: groupCpuMs(child.pid) };
      await sleep(POLL_MS);
    }
    throw new Error(`no answer from /healthz within ${TIMEOUT_MS} ms`);
  } finally {
    if (child.exitCode === null) process.kill(-(child.pid ?? 0), 'SIGTERM');
    await exited;
  }
}

const dir = mkdtempSync(join(tmpdir(), 'start-time-'));
const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, 'auth.db')}`, LOG_LEVEL: 'warn' };
for (const name of ['REDIS_URL', 'SMTP_URL', 'APP_SECRET', 'PUBLIC_URL']) delete env[name];
try {
  const warmUp = await timeOneStart(env);
  const runs = [];
  for (let i = 0; i < Number(args.runs); i++) runs.push(await timeOneStart(env));
  const ms = (t) => `${Math.round(t)} ms`;
  const summary = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
    return `median ${ms(median)}, min ${ms(sorted[0] ?? 0)}, max ${ms(sorted.at(-1) ?? 0)}`;
  };
  console.log(
    `node ${process.version}, "${args.command}", warm-up (not counted): ${ms(warmUp.wall)}`,
  );
  console.log(`${runs.length} runs, wall: ${summary(runs.map((r) => r.wall))}`);
  console.log(`${runs.length} runs, CPU:  ${summary(runs.map((r) => r.cpu))}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
