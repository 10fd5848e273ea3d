/* global fetch */
// Starts and stops the built service (dist/main.cjs) as a separate process, and reads its memory
// (/proc/<pid>/status) and event-loop delay (through the bench/loop-monitor.cjs preload).
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The built service; BENCH_SERVICE_ENTRY points elsewhere to measure another build of it. */
const ENTRY = process.env.BENCH_SERVICE_ENTRY ?? join(ROOT, 'dist', 'main.cjs');
const LOOP_MONITOR = fileURLToPath(new URL('./loop-monitor.cjs', import.meta.url));
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
/** USER_HZ: /proc reports CPU times in these ticks (100 on every mainstream Linux). */
const CLOCK_TICKS_PER_SECOND = 100;

/** Settings the benchmark never inherits from the caller's shell. */
// UV_THREADPOOL_SIZE: the bench's own (service-threadpool.mjs); the service sizes its pool as
// `npm start` does, unless BENCH_SERVICE_ENV says otherwise.
const CLEARED_ENV = [
  'DATABASE_URL',
  'REDIS_URL',
  'SMTP_URL',
  'APP_SECRET',
  'PUBLIC_URL',
  'PORT',
  'UV_THREADPOOL_SIZE',
];

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The node flags of `npm start` (package.json), so the benchmark measures the service as it is run.
 * @returns {string[]}
 */
function startScriptNodeFlags() {
  const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start;
  const words = start.split(/\s+/);
  return words.slice(words.indexOf('node') + 1).filter((word) => word.startsWith('--'));
}

/** A port nobody listens on right now. @returns {Promise<number>} */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

/**
 * @typedef {object} ServiceOptions
 * @property {import('./database.mjs').BenchDatabase} database
 * @property {string | undefined} redisUrl   REDIS_URL for the service (BENCH_REDIS_URL)
 * @property {string | undefined} logLevel   LOG_LEVEL; the service's default (info) when unset
 * @property {string | undefined} logFile    where the service's stdout goes (default: discarded)
 * @property {string | undefined} cpuProfDir when set, the service runs with --cpu-prof into it
 * @property {string} [heapSnapshot]  when set, the loop monitor writes a heap snapshot there on
 *   every loopDelay() call
 * @property {Record<string, string>} [env]  more environment for the service (e.g. PUBLIC_URL, the
 *   same for several instances)
 * @property {(service: Service) => void} [onSpawn]  called as soon as the process exists, before
 *   it is ready (to watch its start-up)
 */

/** @param {ServiceOptions} options */
export async function startService(options) {
  const port = await freePort();
  const loopFile = join(options.database.workDir, 'loop-delay.json');
  const env = { ...process.env };
  for (const name of CLEARED_ENV) delete env[name];
  Object.assign(env, options.database.env, {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: options.database.url,
    TRUST_PROXY: 'true',
    BENCH_LOOP_FILE: loopFile,
    NODE_OPTIONS: `--require=${LOOP_MONITOR}`,
  });
  // BENCH_SERVICE_ENV: environment to try on the service only, `NAME=value` separated by spaces
  // (e.g. UV_THREADPOOL_SIZE=1: the bench process keeps its own, for the raw argon2id figure).
  for (const pair of (process.env.BENCH_SERVICE_ENV ?? '').split(/\s+/).filter(Boolean)) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`BENCH_SERVICE_ENV: "${pair}" is not NAME=value`);
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  if (options.redisUrl) env.REDIS_URL = options.redisUrl;
  Object.assign(env, options.env);
  if (options.logLevel) env.LOG_LEVEL = options.logLevel;
  if (options.heapSnapshot) env.BENCH_HEAP_SNAPSHOT = options.heapSnapshot;

  // BENCH_SERVICE_NODE_OPTIONS: flags to try on the service only (e.g. --max-semi-space-size=4),
  // on its command line, where V8 takes every flag (NODE_OPTIONS refuses some).
  const trying = (process.env.BENCH_SERVICE_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
  const nodeArgs = [...startScriptNodeFlags(), ...trying];
  if (options.cpuProfDir) {
    mkdirSync(options.cpuProfDir, { recursive: true });
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`);
  }
  const stdout = options.logFile ? openSync(options.logFile, 'w') : 'ignore';
  const child = spawn(process.execPath, [...nodeArgs, ENTRY], {
    cwd: ROOT,
    env,
    stdio: ['ignore', stdout, 'pipe'],
  });
  if (typeof stdout === 'number') closeSync(stdout);

  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  let hasExited = false;
  void exited.then(() => (hasExited = true));

  const service = new Service(`http://127.0.0.1:${port}`, child, exited, loopFile);
  options.onSpawn?.(service);
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (hasExited) throw new Error(`the service exited during start-up:\n${stderr}`);
    if (await service.isReady()) return service;
    if (Date.now() > deadline) {
      await service.stop();
      throw new Error(`the service did not become ready within ${READY_TIMEOUT_MS} ms:\n${stderr}`);
    }
    await sleep(100);
  }
}

export class Service {
  /**
   * @param {string} url
   * @param {import('node:child_process').ChildProcess} child
   * @param {Promise<number | null>} exited
   * @param {string} loopFile
   */
  constructor(url, child, exited, loopFile) {
    this.url = url;
    this.child = child;
    this.pid = /** @type {number} */ (child.pid);
    this.exited = exited;
    this.loopFile = loopFile;
    this.loopSequence = 0;
  }

  async isReady() {
    try {
      const response = await fetch(`${this.url}/readyz`);
      return response.status === 200;
    } catch {
      return false;
    }
  }

  /** Resident and peak resident memory, and the resident set's anonymous and file parts, in bytes. */
  memory() {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kib = (field) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return {
      rss: kib('VmRSS') * 1024,
      hwm: kib('VmHWM') * 1024,
      anon: kib('RssAnon') * 1024,
      file: kib('RssFile') * 1024,
    };
  }

  /** CPU time the service has used (user + system, all threads), in seconds. */
  cpuSeconds() {
    const stat = readFileSync(`/proc/${this.pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  }

  /** Resets VmHWM to the current RSS (Linux ≥ 4.0); false where that is not allowed. */
  resetPeakMemory() {
    try {
      writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The event-loop delay since the previous call (the preload resets its histogram each time).
   * @returns {Promise<{ count: number, mean_ms: number, p50_ms: number, p99_ms: number, max_ms: number }>}
   */
  async loopDelay(timeoutMs = 5_000) {
    const wanted = this.loopSequence + 1;
    this.child.kill('SIGUSR2');
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const stats = JSON.parse(readFileSync(this.loopFile, 'utf8'));
        if (stats.sequence >= wanted) {
          this.loopSequence = stats.sequence;
          return stats;
        }
      } catch {
        // not written yet, or caught half-written
      }
      if (Date.now() > deadline) throw new Error('the loop monitor did not answer SIGUSR2');
      await sleep(20);
    }
  }

  /** SIGTERM (the service drains and exits); SIGKILL if it takes too long. */
  async stop() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
  }
}
