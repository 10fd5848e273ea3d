// `npm run bench:realtime`: the chat socket under load (issue 11). Starts the built service
// (dist/main.cjs, its own process, `npm start`'s flags) on a fresh database, seeds accounts,
// sessions and conversations straight into it, and drives it from a load generator in another
// process (bench/realtime/clients.mjs), whose sockets and HTTP connections come from 127.0.0.1–8.
//
//   npm run bench:realtime                                  every scenario, SQLite, one instance
//   npm run bench:realtime -- --only idle --sockets 5000    some scenarios (idle latency stalled
//                                                           reconnect), other sizes
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
//   BENCH_REDIS_URL=redis://127.0.0.1:6379 npm run bench:realtime                  PostgreSQL + Redis
//   … npm run bench:realtime -- --instances 2       two instances on them: every message crosses Redis
//   npm run bench:realtime -- --cpu-prof            the services write a .cpuprofile into
//                                                   bench/results/profiles/
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createBenchDatabase, describeDatabase } from './database.mjs';
import { machineInfo, RESULTS_DIR, writeReport } from './report.mjs';
import { startService } from './server.mjs';
import { forkGenerator } from './realtime/observe.mjs';
import { idleScenario, latencyScenarios, reconnectScenario } from './realtime/scenarios.mjs';
import { PUBLIC_URL, seedPopulation } from './realtime/seed.mjs';
import { evaluateRealtime, REALTIME_COLUMNS, realtimeRows } from './realtime/targets.mjs';

const REALTIME_KEYS = ['idle', 'latency', 'stalled', 'reconnect'];

const { values: args } = parseArgs({
  options: {
    only: { type: 'string' },
    instances: { type: 'string', default: '1' },
    sockets: { type: 'string', default: '10000' },
    members: { type: 'string', default: '2000' },
    rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '30' },
    warmup: { type: 'string', default: '5' },
    idle: { type: 'string', default: '31' },
    'reconnect-concurrency': { type: 'string', default: '1000' },
    'reconnect-rate': { type: 'string', default: '100' },
    'cpu-prof': { type: 'boolean', default: false },
  },
});

const count = (name) => {
  const n = Number(args[name]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer`);
  return n;
};
const instances = count('instances');
const options = {
  sockets: count('sockets'),
  members: count('members'),
  rate: count('rate'),
  seconds: count('seconds'),
  warmup: Number(args.warmup),
  idle: count('idle'),
  reconnectConcurrency: count('reconnect-concurrency'),
  reconnectRate: Number(args['reconnect-rate']),
};
// Idle sockets are an instance's own cost: with two instances, the scenarios that cross Redis.
const defaults = instances === 2 ? ['latency', 'stalled', 'reconnect'] : REALTIME_KEYS;
const selected = args.only ? args.only.split(',').map((s) => s.trim()) : defaults;
for (const key of selected) {
  if (!REALTIME_KEYS.includes(key)) throw new Error(`--only: unknown scenario "${key}"`);
}
if (instances > 2) throw new Error('--instances: 1 or 2');
if (options.sockets % 2 !== 0 || options.members % 2 !== 0)
  throw new Error('--sockets and --members must be even (two members per conversation)');
const redisUrl = process.env.BENCH_REDIS_URL;
if (instances === 2 && (!process.env.BENCH_DATABASE_URL || !redisUrl))
  throw new Error('--instances 2 needs BENCH_DATABASE_URL and BENCH_REDIS_URL');

const database = await createBenchDatabase(process.env.BENCH_DATABASE_URL);
/** @type {import('./server.mjs').Service[]} */
const services = [];
const generator = forkGenerator();
let population;
let cleaningUp;
const cleanUp = () =>
  (cleaningUp ??= (async () => {
    await generator.exit();
    await population?.close();
    await Promise.all(services.map((s) => s.stop()));
    await database.drop();
  })());
process.once('SIGINT', () => {
  console.error('\ninterrupted: stopping the services and dropping the database');
  void cleanUp().finally(() => process.exit(130));
});

try {
  for (let i = 0; i < instances; i++) {
    // Each instance keeps its own scratch directory (its loop-delay file).
    const workDir = i === 0 ? database.workDir : join(database.workDir, `instance-${i}`);
    mkdirSync(workDir, { recursive: true });
    services.push(
      await startService({
        database: { ...database, workDir },
        redisUrl,
        env: { PUBLIC_URL },
        logFile: process.env.BENCH_SERVICE_LOG
          ? `${process.env.BENCH_SERVICE_LOG}.${i}`
          : undefined,
        cpuProfDir: args['cpu-prof'] ? join(RESULTS_DIR, 'profiles') : undefined,
      }),
    );
  }
  const accounts = Math.max(options.sockets, options.members);
  console.log(
    `${instances} instance(s) (pid ${services.map((s) => s.pid).join(', ')}); ` +
      `${describeDatabase(database.url)}${redisUrl ? ' + Redis' : ''}; seeding ${accounts} accounts …`,
  );
  population = await seedPopulation(database, accounts);
  console.log(`seeded in ${population.seed_seconds} s`);
  const bench = { services, population, generator, options, redisUrl };

  const results = {};
  if (selected.includes('idle')) {
    console.log(`idle: ${options.sockets} sockets, ${options.idle} s idle before and after …`);
    results.idle = await idleScenario(bench);
    console.log(JSON.stringify(results.idle));
  }
  if (selected.includes('latency') || selected.includes('stalled')) {
    console.log(
      `latency: ${options.members} members, ${options.rate} sends/s, ${options.warmup} + ${options.seconds} s` +
        (selected.includes('stalled') ? ', then again with 1 in 100 not reading …' : ' …'),
    );
    const run = await latencyScenarios(bench, { stalled: selected.includes('stalled') });
    results.latency = run.latency;
    results.stalled = run.stalled;
    results.latency_connect = run.connect;
    console.log(JSON.stringify({ latency: run.latency, stalled: run.stalled }));
  }
  if (selected.includes('reconnect')) {
    console.log(
      `reconnect: ${options.sockets} sockets dropped at once under ${options.reconnectRate} sends/s …`,
    );
    results.reconnect = await reconnectScenario(bench);
    console.log(JSON.stringify(results.reconnect));
  }

  const kind = database.kind === 'postgres' ? 'postgres' : 'sqlite';
  const report = {
    machine: machineInfo(),
    settings: {
      database: describeDatabase(database.url),
      instances,
      redis: redisUrl ? 'events through Redis pub/sub' : 'events inside the process',
      options,
      description:
        `${instances} service instance(s) (dist/main.cjs, npm start's flags)` +
        (redisUrl ? ' with Redis' : '') +
        '; the load generator in its own process holds the sockets and sends over 64 kept-alive ' +
        'HTTP connections, both from 127.0.0.1–8; with two instances, fans are on the first and ' +
        'influencers on the second, and each sends through its own.',
    },
    ...results,
    targets: evaluateRealtime(results, instances),
    notes: [
      'Latency: from the moment the sender read its 201 to the moment the peer’s socket got ' +
        'message.created, both in the load generator (one clock); an event read before its 201 ' +
        'counts as 0 ms. In-service delivery: the chat_delivery_latency_seconds histogram ' +
        '(publication after commit → write on the socket), as the upper bound of its bucket.',
      'Delivery check: every client that kept reading ends with exactly the messages the ' +
        'service answered 201 for in its conversation (version → id), none applied twice.',
    ],
  };
  const name = `latest-realtime-${kind}${instances === 2 ? '-2' : ''}`;
  writeReport(
    name,
    'Chat in real time: benchmark',
    report,
    realtimeRows(results),
    REALTIME_COLUMNS,
  );
  console.log(JSON.stringify(results, null, 2));
} finally {
  await cleanUp();
}
