// The memory scenario (issue 13): a service of its own on a fresh database, its resident set
// sampled every 100 ms from the moment the process exists: start-up, users registered over the
// API, then GET /api/profile on 10 connections and POST /api/login on 10 more, at once. Reports
// the largest sample of each phase and VmHWM (the kernel's own peak since the process started),
// and where the memory was at its largest: from outside (/proc/<pid>/smaps, bench/smaps.mjs) at
// the largest sample, from inside the service (bench/loop-monitor.cjs: process.memoryUsage() and
// V8's heap spaces) at its own largest, and, with `--heap-snapshot`, what the live heap holds.
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { cwd } from 'node:process';
import { createBenchDatabase } from './database.mjs';
import { ARGON2_PARAMETERS } from './hashing.mjs';
import { summarizeHeapSnapshot } from './heap-snapshot.mjs';
import { runLoad } from './load.mjs';
import { MIB, round } from './memory.mjs';
import { RESULTS_DIR } from './report.mjs';
import { BUILDERS } from './scenarios.mjs';
import { seedAccounts } from './seed.mjs';
import { sleep, startService } from './server.mjs';
import { residentByKind } from './smaps.mjs';

export const MEMORY_LOAD = { profileConnections: 10, loginConnections: 10, loginUsers: 20 };
const SAMPLE_INTERVAL_MS = 100;

/** Writing a snapshot of a ~40 MiB heap takes seconds on a busy machine. */
const SNAPSHOT_TIMEOUT_MS = 60_000;
/** Kept after the run, to open in Chrome DevTools (Memory tab). */
const SNAPSHOT_FILE = join(RESULTS_DIR, 'profiles', 'memory.heapsnapshot');

/**
 * @param {{ adminUrl?: string, redisUrl?: string, logLevel?: string, durationSeconds: number,
 *   heapSnapshot: boolean }} options
 */
export async function measureMemoryScenario(options) {
  const database = await createBenchDatabase(options.adminUrl);
  const databaseDir = database.kind === 'sqlite' ? database.workDir : undefined;
  const recorder = rssRecorder(databaseDir);
  const snapshotFile = options.heapSnapshot ? SNAPSHOT_FILE : undefined;
  if (snapshotFile) {
    mkdirSync(dirname(snapshotFile), { recursive: true });
    rmSync(snapshotFile, { force: true });
  }
  /** @type {import('./server.mjs').Service | undefined} */
  let service;
  try {
    service = await startService({
      database,
      redisUrl: options.redisUrl,
      logLevel: options.logLevel,
      logFile: undefined,
      cpuProfDir: undefined,
      heapSnapshot: snapshotFile,
      onSpawn: recorder.start,
    });
    recorder.phase('set-up');
    const seed = await seedAccounts(service.url, {
      loginUsers: MEMORY_LOAD.loginUsers,
      changeUsers: 0,
    });
    const context = { url: service.url, seed, database };
    const login = await BUILDERS.login(context, MEMORY_LOAD.loginConnections);
    const profile = await BUILDERS.profile(context, MEMORY_LOAD.profileConnections);
    recorder.phase('load');
    const [loginLoad, profileLoad] = await Promise.all([
      runLoad({
        url: service.url,
        durationSeconds: options.durationSeconds,
        connections: MEMORY_LOAD.loginConnections,
        request: login.request,
        expect: { status: 200 },
      }),
      runLoad({
        url: service.url,
        durationSeconds: options.durationSeconds,
        connections: MEMORY_LOAD.profileConnections,
        ipOffset: 2048,
        request: profile.request,
        expect: { status: 200 },
      }),
    ]);
    await sleep(500); // the last logins still in flight
    const { samples, largest } = recorder.stop();
    const hwm = round(service.memory().hwm / MIB);
    const databaseFiles = databaseDir ? sqliteFileSizes(databaseDir) : undefined;
    const inside = await service.loopDelay(snapshotFile ? SNAPSHOT_TIMEOUT_MS : undefined);
    return {
      login: { connections: MEMORY_LOAD.loginConnections, ...loginLoad },
      profile: { connections: MEMORY_LOAD.profileConnections, ...profileLoad },
      sample_interval_ms: SAMPLE_INTERVAL_MS,
      samples: samples.length,
      peak_by_phase_mib: peakByPhase(samples),
      peak_sampled_mib: Math.max(...samples.map((s) => s.rss_mib)),
      vm_hwm_mib: hwm,
      peak_rss_mib: Math.max(hwm, ...samples.map((s) => s.rss_mib)),
      loop_delay: { p99_ms: inside.p99_ms, max_ms: inside.max_ms },
      at_largest_sample: largest,
      at_peak_inside: inside.peak_memory,
      sqlite_files_kib: databaseFiles,
      heap_snapshot_after_load: snapshotFile
        ? { file: relative(cwd(), snapshotFile), ...summarizeHeapSnapshot(snapshotFile) }
        : undefined,
    };
  } finally {
    recorder.stop();
    await service?.stop();
    await database.drop();
  }
}

/** argon2's working memory: one anonymous mapping of memoryCost KiB (and a page) per hash. */
const ARGON2_BYTES = ARGON2_PARAMETERS.memoryCost * 1024;

/**
 * VmRSS every 100 ms, each sample labelled with the phase of the run it fell in; at each new
 * largest sample, also its anonymous and file-backed parts and the resident set by kind (smaps).
 * @param {string | undefined} databaseDir  where the SQLite files are
 */
function rssRecorder(databaseDir) {
  /** @type {{ t_ms: number, phase: string, rss_mib: number }[]} */
  const samples = [];
  /** @type {Record<string, number | string>} */
  let largest = { rss_mib: 0 };
  let phase = 'start-up';
  let started = 0;
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let timer;
  return {
    /** @param {import('./server.mjs').Service} service */
    start(service) {
      started = Date.now();
      const sample = () => {
        try {
          const { rss, anon, file } = service.memory();
          if (rss === 0) return;
          const rss_mib = round(rss / MIB);
          samples.push({ t_ms: Date.now() - started, phase, rss_mib });
          if (rss_mib <= Number(largest.rss_mib)) return;
          const parts = { anon_mib: round(anon / MIB), file_mib: round(file / MIB) };
          const kinds = residentByKind(service.pid, { argon2Bytes: ARGON2_BYTES, databaseDir });
          largest = { rss_mib, phase, ...parts, smaps: kinds };
        } catch {
          // not started yet, or gone
        }
      };
      sample();
      timer = setInterval(sample, SAMPLE_INTERVAL_MS);
    },
    /** @param {string} name */
    phase(name) {
      phase = name;
    },
    stop() {
      clearInterval(timer);
      return { samples, largest };
    },
  };
}

/**
 * The SQLite files' sizes: the page cache (malloc'd, default cache_size of 2,000 KiB) never holds
 * more than the database, and nothing is memory-mapped but the WAL index (-shm).
 * @param {string} dir
 */
function sqliteFileSizes(dir) {
  return Object.fromEntries(
    readdirSync(dir)
      .filter((name) => name.startsWith('auth.db'))
      .map((name) => [name, Math.round(statSync(join(dir, name)).size / 1024)]),
  );
}

/** @param {{ phase: string, rss_mib: number }[]} samples */
function peakByPhase(samples) {
  /** @type {Record<string, number>} */
  const peaks = {};
  for (const { phase, rss_mib } of samples) peaks[phase] = Math.max(peaks[phase] ?? 0, rss_mib);
  return peaks;
}
