// `npm run bench`: starts the built service in its own process on a fresh database, seeds accounts,
// drives it over loopback with autocannon, checks the targets and writes bench/results/latest.*
// (latest-postgres-redis.* on PostgreSQL + Redis, latest-postgres.* on PostgreSQL alone).
// Its options: USAGE below (`npm run bench -- --help`).
import './service-threadpool.mjs'; // first: may run the bench again with the service's pool size
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createBenchDatabase, describeDatabase } from './database.mjs';
import { findingNotes, findingSections } from './findings.mjs';
import { ARGON2_PARAMETERS } from './hashing.mjs';
import { measureMemoryScenario } from './memory-scenario.mjs';
import { machineInfo, RESULTS_DIR, SOAK_COLUMNS, tableRows, writeReport } from './report.mjs';
import { CHANGE_USERS, LOGIN_CONNECTIONS } from './scenarios.mjs';
import { seedAccounts } from './seed.mjs';
import { startService } from './server.mjs';
import { ALL, runSuite } from './suite.mjs';
import { runSoak } from './soak.mjs';
import { runRealtimeBench } from './realtime/spawn.mjs';
import { evaluateSoak, evaluateTargets } from './targets.mjs';

const LOGIN_USERS = 16;

const USAGE = `Usage: npm run bench [-- options]

  npm run bench                         all scenarios, 10 s each (SQLite)
  npm run bench -- --duration 3         shorter scenarios, for a quick look
  npm run bench -- --only bare,profile  some scenarios, of:
                                        ${ALL.join(' ')}
  npm run bench -- --soak               5 minutes of mixed traffic, RSS sampled every 5 s
                   --soak-duration 60   another soak length, in seconds
  npm run bench -- --cpu-prof           the service writes a .cpuprofile into bench/results/profiles/
  npm run bench -- --only memory --heap-snapshot   the memory scenario's service writes a heap
                                        snapshot after the load; the report sums it up by kind
  --server-log FILE, --log-level LEVEL  keep the service's log, at that level

Environment:
  BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres   on PostgreSQL
  BENCH_REDIS_URL=redis://127.0.0.1:6379                           rate-limit counters in Redis too
  BENCH_SERVICE_ENTRY=/path/to/main.cjs                            measure another build
  BENCH_SERVICE_NODE_OPTIONS=--max-semi-space-size=4               node flags for the service only
  BENCH_SERVICE_ENV="UV_THREADPOOL_SIZE=1"                         environment for the service only
`;

/** A mistake in the command line: one line and the usage, not a stack. */
function refuse(message) {
  process.stderr.write(`bench: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      duration: { type: 'string', default: '10' },
      only: { type: 'string' },
      soak: { type: 'boolean', default: false },
      'soak-duration': { type: 'string', default: '300' },
      'cpu-prof': { type: 'boolean', default: false },
      'server-log': { type: 'string' },
      'log-level': { type: 'string' },
      'heap-snapshot': { type: 'boolean', default: false },
    },
  }));
} catch (error) {
  refuse(error.message);
}
if (args.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

const positive = (name, value) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) refuse(`--${name} must be a positive number of seconds`);
  return n;
};
const duration = positive('duration', args.duration);
const selected = args.only ? args.only.split(',').map((s) => s.trim()) : ALL;
for (const key of selected) {
  if (!ALL.includes(key)) refuse(`--only: unknown scenario "${key}"`);
}

const realtime = {
  seconds: args.duration === '10' ? undefined : args.duration,
  cpuProf: args['cpu-prof'],
};
if (!args.soak && selected.every((key) => key === 'realtime')) {
  await runRealtimeBench(realtime);
  process.exit(0);
}

const database = await createBenchDatabase(process.env.BENCH_DATABASE_URL);
/** @type {import('./server.mjs').Service | undefined} */
let service;
let cleaningUp;
const cleanUp = () =>
  (cleaningUp ??= (async () => {
    await service?.stop();
    await database.drop();
  })());
process.once('SIGINT', () => {
  console.error('\ninterrupted: stopping the service and dropping the database');
  void cleanUp().finally(() => process.exit(130));
});

try {
  service = await startService({
    database,
    redisUrl: process.env.BENCH_REDIS_URL,
    logLevel: args['log-level'],
    logFile: args['server-log'],
    cpuProfDir: args['cpu-prof'] ? join(RESULTS_DIR, 'profiles') : undefined,
  });
  const settings = {
    database: describeDatabase(database.url),
    redis: process.env.BENCH_REDIS_URL ? 'rate-limit counters in Redis' : 'in-memory rate limits',
    log_level: args['log-level'] ?? 'info (service default), written to /dev/null',
    description:
      'The service (dist/main.cjs) runs in its own process with TRUST_PROXY=true; every request ' +
      'carries its own X-Forwarded-For address from 10.0.0.0/20, so the per-IP limits stay on ' +
      '(their cost is in every figure) without throttling the load. Load from autocannon in the ' +
      'bench process over loopback.',
  };
  console.log(`service pid ${service.pid} at ${service.url}; ${settings.database}`);
  const seed = await seedAccounts(service.url, {
    loginUsers: LOGIN_USERS,
    changeUsers: CHANGE_USERS,
  });
  const context = { url: service.url, seed, database };

  if (args.soak) {
    const soakSeconds = positive('soak-duration', args['soak-duration']);
    console.log(`soak: ${soakSeconds} s of mixed traffic, RSS sampled every 5 s`);
    const soak = await runSoak(service, context, soakSeconds);
    const report = {
      machine: machineInfo(),
      settings: { ...settings, soak_seconds: soakSeconds },
      soak,
      targets: [evaluateSoak(soak)],
      notes: [
        `RSS samples (s: MiB): ${soak.samples.map((s) => `${s.t_s}: ${s.rss_mib}`).join(', ')}`,
        `start: median RSS of the ${soak.window_s} s after a ${soak.warm_up_s} s warm-up; end: ` +
          `median of the last ${soak.window_s} s (each argon2id hash in flight holds ` +
          `${ARGON2_PARAMETERS.memoryCost / 1024} MiB, so ` +
          `single samples jump); max ${soak.max_rss_mib} MiB`,
        `service event-loop delay over the soak: p99 ${soak.loop_delay.p99_ms} ms, max ` +
          `${soak.loop_delay.max_ms} ms`,
      ],
    };
    const rows = soak.loads.map((l) => ({ ...l, scenario: l.name }));
    writeReport('latest-soak', 'Account service soak test', report, rows, SOAK_COLUMNS);
  } else {
    const suite = selected.filter((key) => key !== 'memory' && key !== 'realtime');
    const results = await runSuite(service, context, { duration, selected: suite });
    await service.stop(); // the memory scenario runs a service of its own, alone
    if (selected.includes('memory')) {
      console.log('memory: a fresh service, GET /api/profile and POST /api/login on 10 + 10 …');
      results.memory = await measureMemoryScenario({
        adminUrl: process.env.BENCH_DATABASE_URL,
        redisUrl: process.env.BENCH_REDIS_URL,
        logLevel: args['log-level'],
        durationSeconds: duration,
        heapSnapshot: args['heap-snapshot'],
      });
    }
    const report = {
      machine: machineInfo(),
      settings: { ...settings, duration_s: duration },
      ...results,
      targets: evaluateTargets(results),
      notes: [
        'The bare route is GET /healthz: it does no I/O, so it is the framework ceiling.',
        'confirm-email uses a wrong code: its expected answer is 400 invalid_code (after 5 wrong ' +
          'tries the code is burnt and the answer stays 400 invalid_code).',
        '"Unexpected" counts every answer other than the expected one, plus connection errors.',
        'Peak RSS is the service process’s VmHWM (reset per scenario) and VmRSS sampled every ' +
          '200 ms; loop p99 is its event-loop delay (perf_hooks, preloaded with --require); CPU ' +
          'ms/req is its CPU time (all threads, /proc/<pid>/stat) per request sent.',
        `Raw argon2id: @node-rs/argon2 verify in the bench process, ${LOGIN_CONNECTIONS} loops at ` +
          'once, with the service’s ARGON2_PARAMETERS (login does one verify per request), ' +
          'measured in slices between slices of the login scenario, so both see the same machine.',
        ...findingNotes(results),
      ],
      sections: findingSections(results),
    };
    // One report per backend, so a PostgreSQL run leaves the SQLite figures in place.
    const reportName = !process.env.BENCH_DATABASE_URL
      ? 'latest'
      : process.env.BENCH_REDIS_URL
        ? 'latest-postgres-redis'
        : 'latest-postgres';
    writeReport(reportName, 'Account service benchmark', report, tableRows(results));
    if (args['cpu-prof'])
      console.log('service CPU profile: bench/results/profiles/ (written when it exits)');
    if (selected.includes('realtime')) await runRealtimeBench(realtime);
  }
} finally {
  await cleanUp();
}
