// The memory scenario (issue 13): a service of its own on a fresh database, its resident set
// sampled every 100 ms from the moment the process exists: start-up, users registered over the
// API, then GET /api/profile on 10 connections and POST /api/login on 10 more, at once. Reports
// the largest sample of each phase and VmHWM (the kernel's own peak since the process started),
// and, from inside the service (bench/loop-monitor.cjs), where the memory was at its largest.
import { createBenchDatabase } from './database.mjs';
import { ARGON2_PARAMETERS } from './hashing.mjs';
import { runLoad } from './load.mjs';
import { MIB, round } from './memory.mjs';
import { BUILDERS } from './scenarios.mjs';
import { seedAccounts } from './seed.mjs';
import { sleep, startService } from './server.mjs';

export const MEMORY_LOAD = { profileConnections: 10, loginConnections: 10, loginUsers: 20 };
const SAMPLE_INTERVAL_MS = 100;

/**
 * @param {{ adminUrl?: string, redisUrl?: string, logLevel?: string, durationSeconds: number }} options
 */
export async function measureMemoryScenario(options) {
  const database = await createBenchDatabase(options.adminUrl);
  const recorder = rssRecorder();
  /** @type {import('./server.mjs').Service | undefined} */
  let service;
  try {
    service = await startService({
      database,
      redisUrl: options.redisUrl,
      logLevel: options.logLevel,
      logFile: undefined,
      cpuProfDir: undefined,
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
    const inside = await service.loopDelay();
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
    };
  } finally {
    recorder.stop();
    await service?.stop();
    await database.drop();
  }
}

/** argon2's working memory: one anonymous mapping of memoryCost KiB (and malloc's page) per hash. */
const ARGON2_BYTES = ARGON2_PARAMETERS.memoryCost * 1024;

/**
 * VmRSS every 100 ms, each sample labelled with the phase of the run it fell in; at each new
 * largest sample, also its anonymous and file-backed parts and the argon2 buffers then mapped.
 */
function rssRecorder() {
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
          const buffers = service.mappingsSized(ARGON2_BYTES, ARGON2_BYTES + 256 * 1024);
          const parts = { anon_mib: round(anon / MIB), file_mib: round(file / MIB) };
          largest = { rss_mib, phase, ...parts, argon2_buffers_mapped: buffers };
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

/** @param {{ phase: string, rss_mib: number }[]} samples */
function peakByPhase(samples) {
  /** @type {Record<string, number>} */
  const peaks = {};
  for (const { phase, rss_mib } of samples) peaks[phase] = Math.max(peaks[phase] ?? 0, rss_mib);
  return peaks;
}
