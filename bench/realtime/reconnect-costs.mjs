// Service CPU per step of a reconnect, one step at a time (no sends meanwhile): the upgrade to
// `ready` with the token verified afresh and with it cached, then each catch-up request of
// API.md's rule, and GET /api/profile as the cheapest authenticated request for comparison.
// CPU time (utime + stime of the service), so it moves little with the machine's other work.
//
//   node bench/realtime/reconnect-costs.mjs [--sockets 10000] [--concurrency 200]
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { createBenchDatabase } from '../database.mjs';
import { startService } from '../server.mjs';
import { JsonClient, sourceAddress } from './http.mjs';
import { PUBLIC_URL, seedPopulation } from './seed.mjs';

const { values: args } = parseArgs({
  options: {
    sockets: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '200' },
    'cpu-prof': { type: 'string' },
  },
});
const sockets = Number(args.sockets);
const concurrency = Number(args.concurrency);

async function eachLimit(items, limit, work) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await work(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function open(url, token, index) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${token}` },
      localAddress: sourceAddress(index),
      perMessageDeflate: false,
    });
    ws.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'ready') resolve(ws);
    });
    ws.once('close', (code) => reject(new Error(`closed with ${code}`)));
    ws.once('error', reject);
  });
}

const database = await createBenchDatabase(process.env.BENCH_DATABASE_URL);
const service = await startService({
  database,
  env: { PUBLIC_URL },
  cpuProfDir: args['cpu-prof'],
});
const population = await seedPopulation(database, sockets);
const members = population.members.slice(0, sockets);
const tokens = await population.mintTokens(members);
const http = new JsonClient(64);
const wsUrl = `${service.url.replace('http', 'ws')}/api/chat/ws`;
const results = {};

const pause = () => new Promise((resolve) => setTimeout(resolve, 2000));

/** One step for every member, with 2 s of idleness around it (to find it in a profile). */
/** The service's user and system CPU seconds so far. */
function cpuTimes() {
  const stat = readFileSync(`/proc/${service.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
}

async function step(name, work) {
  await pause();
  const times = cpuTimes();
  const cpu = service.cpuSeconds();
  const started = performance.now();
  await eachLimit(members, concurrency, work);
  const ms = ((service.cpuSeconds() - cpu) * 1000) / members.length;
  const system = ((cpuTimes().system - times.system) * 1000) / members.length;
  results[name] = {
    cpu_ms: Math.round(ms * 1000) / 1000,
    system_ms: Math.round(system * 1000) / 1000,
    s: Math.round(performance.now() - started) / 1000,
  };
  console.log(name, JSON.stringify(results[name]));
}

try {
  let held = [];
  const connectAll = async () => {
    held = [];
    await step('upgrade to ready', async (_m, i) => {
      held.push(await open(wsUrl, tokens[i], i));
    });
  };
  const get = (path) => (m, i) =>
    http.expect(200, 'GET', `${service.url}${path.replace(':id', m.conversationId)}`, tokens[i]);
  await connectAll(); // first: every token verified, every session touched
  for (const ws of held) ws.terminate();
  await new Promise((r) => setTimeout(r, 1000));
  await connectAll();
  await step('GET conversations?limit=20', get('/api/chat/conversations?limit=20'));
  await step('GET unread', get('/api/chat/unread'));
  await step('GET changes', get('/api/chat/conversations/:id/changes?since_version=0&limit=200'));
  await step('GET profile', get('/api/profile'));
  for (const ws of held) ws.terminate();
  await new Promise((r) => setTimeout(r, 1000));
  await connectAll();
  for (const ws of held) ws.terminate();
  console.log(JSON.stringify(results));
} finally {
  http.close();
  await population.close();
  await service.stop();
  await database.drop();
}
