// `node bench/sockets.mjs [--sockets 5000] [--idle 31]`: what an idle chat socket costs the
// service. Starts the built service (dist/main.cjs, its own process, SQLite), registers one account
// per five sockets, opens the sockets from another process (bench/socket-clients.mjs), and reports
// the service's RSS per socket and the CPU it spends on them while idle (heartbeat included: one
// ping per socket every 30 s). Run `npm run build` first.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from './database.mjs';
import { MIB, round } from './memory.mjs';
import { mapLimit, post, runTag, PASSWORDS } from './seed.mjs';
import { sleep, startService } from './server.mjs';

const SOCKETS_PER_USER = 5; // API.md's limit
const { values: args } = parseArgs({
  options: {
    sockets: { type: 'string', default: '5000' },
    idle: { type: 'string', default: '31' },
  },
});
const socketCount = Number(args.sockets);
const idleSeconds = Number(args.idle);

/** RSS after the service has been left alone for a while (let V8 settle). */
async function settledRss(service) {
  await sleep(3_000);
  return service.memory().rss;
}

/** The service's CPU over `seconds` of idleness, as a share of one core. */
async function idleCpu(service, seconds) {
  const before = service.cpuSeconds();
  await sleep(seconds * 1000);
  return (service.cpuSeconds() - before) / seconds;
}

const database = await createBenchDatabase(process.env.BENCH_DATABASE_URL);
const service = await startService({ database, redisUrl: process.env.BENCH_REDIS_URL });
const clients = fork(fileURLToPath(new URL('./socket-clients.mjs', import.meta.url)));
try {
  const tag = runTag();
  const users = Math.ceil(socketCount / SOCKETS_PER_USER);
  const emails = Array.from({ length: users }, (_, i) => `socket-${tag}-${i}@example.com`);
  const replies = await mapLimit(emails, 4, (email) =>
    post(service.url, '/api/register', { email, password: PASSWORDS[0] }, 201),
  );
  const tokens = Array.from({ length: socketCount }, (_, i) => replies[i % users].access_token);

  const rssBefore = await settledRss(service);
  const cpuBefore = await idleCpu(service, idleSeconds);
  const opened = new Promise((resolve) => clients.once('message', resolve));
  clients.send({ url: `${service.url.replace('http', 'ws')}/api/chat/ws`, tokens });
  const report = /** @type {{ ready?: number, ms?: number, error?: string }} */ (await opened);
  if (report.error) throw new Error(report.error);
  const rssAfter = await settledRss(service);
  const cpuAfter = await idleCpu(service, idleSeconds);

  console.log(
    JSON.stringify(
      {
        sockets: report.ready,
        accounts: users,
        connect_and_ready_ms: report.ms,
        rss_before_mib: round(rssBefore / MIB),
        rss_after_mib: round(rssAfter / MIB),
        rss_per_socket_kib: round((rssAfter - rssBefore) / socketCount / 1024, 2),
        idle_cpu_core_share_before: round(cpuBefore, 4),
        idle_cpu_core_share_with_sockets: round(cpuAfter, 4),
        idle_window_s: idleSeconds,
      },
      null,
      2,
    ),
  );
} finally {
  clients.send('close');
  await new Promise((resolve) => clients.once('exit', resolve));
  await service.stop();
  await database.drop();
}
