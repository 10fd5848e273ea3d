// The real-time scenarios of issue 11 (bench/realtime.mjs runs them in order), each against
// services already started, a seeded population and the load generator:
//   idle       10,000 authenticated idle sockets: RSS per socket, heartbeat CPU
//   latency    2,000 connected members, 500 sends/s: the peer's socket after the sender's 201
//   stalled    the same with one client in a hundred that never reads
//   reconnect  10,000 sockets dropped at once reconnect and catch up while sends go on
import { performance } from 'node:perf_hooks';
import { MIB, round } from '../memory.mjs';
import { sleep } from '../server.mjs';
import {
  chatMetricsBetween,
  cpuSeconds,
  kernelQueues,
  kernelSlab,
  listenOverflows,
  redisBetween,
  redisSnapshot,
  sampleRss,
  scrapeChatMetrics,
} from './observe.mjs';

/** Handshakes in flight at once while sockets are opened for a scenario's set-up. */
const OPEN_CONCURRENCY = 64;
/** One in this many clients stops reading in `stalled`. */
const STALLED_ONE_IN = 100;

/**
 * @typedef {object} Bench
 * @property {import('../server.mjs').Service[]} services   one, or two sharing PostgreSQL and Redis
 * @property {import('./seed.mjs').Population} population
 * @property {ReturnType<import('./observe.mjs').forkGenerator>} generator
 * @property {string | undefined} redisUrl
 * @property {{ sockets: number, members: number, rate: number, warmup: number, seconds: number,
 *   idle: number, reconnectConcurrency: number }} options
 */

/**
 * The first `count` members as the generator's clients, with fresh tokens. With two instances,
 * fans connect (and send) to the first, influencers to the second: every message crosses Redis.
 * @param {Bench} bench
 */
async function clientsOf(bench, count) {
  const members = bench.population.members.slice(0, count);
  const tokens = await bench.population.mintTokens(members);
  const specs = members.map((member, index) => {
    const service = bench.services[member.role === 'fan' ? 0 : bench.services.length - 1];
    return {
      index,
      userId: member.userId,
      token: tokens[index],
      conversationId: member.conversationId,
      http: service.url,
      ws: `${service.url.replace('http', 'ws')}/api/chat/ws`,
    };
  });
  const pairs = Array.from({ length: count / 2 }, (_, k) => [2 * k, 2 * k + 1]);
  return { specs, pairs };
}

/** RSS once the service has been left alone for a while (let V8 settle). */
async function settledRss(services) {
  await sleep(3_000);
  return services.reduce((sum, s) => sum + s.memory().rss, 0);
}

/** CPU of the services over `seconds` of idleness, as a share of one core. */
async function idleCpu(services, seconds) {
  const before = cpuSeconds(services);
  await sleep(seconds * 1000);
  return (cpuSeconds(services) - before) / seconds;
}

/** (a) Idle sockets: what each costs in memory, and what the heartbeat costs in CPU. */
export async function idleScenario(bench) {
  const { services, generator, options } = bench;
  const { specs, pairs } = await clientsOf(bench, options.sockets);
  const rssBefore = await settledRss(services);
  const cpuBefore = await idleCpu(services, options.idle);
  const redisBefore = await redisSnapshot(bench.redisUrl);
  const slabBefore = kernelSlab();
  const opened = await generator.call('open', {
    specs,
    pairs,
    concurrency: OPEN_CONCURRENCY,
    sync: false,
  });
  const rssAfter = await settledRss(services);
  const redisAfter = await redisSnapshot(bench.redisUrl);
  const slabAfter = kernelSlab();
  await loopDelay(services); // from here: the idle window, one heartbeat round in it
  const cpuAfter = await idleCpu(services, options.idle);
  const loop = await loopDelay(services);
  await generator.call('closeAll');
  return {
    sockets: opened.sockets,
    accounts: specs.length,
    connect_and_ready_ms: opened.ready_ms,
    rss_before_mib: round(rssBefore / MIB),
    rss_after_mib: round(rssAfter / MIB),
    rss_per_socket_kib: round((rssAfter - rssBefore) / opened.sockets / 1024, 2),
    // both ends of each connection are on this machine: half the growth is the server's end
    kernel_slab_per_server_socket_kib: round(
      (slabAfter - slabBefore) / opened.sockets / 2 / 1024,
      2,
    ),
    idle_cpu_core_share_before: round(cpuBefore, 4),
    idle_cpu_core_share_with_sockets: round(cpuAfter, 4),
    heartbeat_cpu_core_share: round(cpuAfter - cpuBefore, 4),
    idle_loop_delay_p99_ms: loop.p99_ms,
    idle_loop_delay_max_ms: loop.max_ms,
    idle_window_s: options.idle,
    redis: redisAfter && {
      channels: redisAfter.pubsub_channels,
      memory_per_channel_bytes: Math.round(
        (redisAfter.used_memory - redisBefore.used_memory) / opened.sockets,
      ),
    },
  };
}

/**
 * One load window over the clients already open: sends at `rate`, the peers' latency, the
 * services' RSS, CPU and delivery metrics, and the check that every listening client holds
 * exactly the stored messages.
 */
async function measureLoad(bench, pairs) {
  const { services, generator, options } = bench;
  const metricsBefore = await scrapeChatMetrics(services);
  const redisBefore = await redisSnapshot(bench.redisUrl);
  const rss = sampleRss(services);
  const started = performance.now();
  const sentBefore = await generator.call('loadStart', { pairs, rate: options.rate });
  const cpuBefore = cpuSeconds(services);
  const window = await generator.call('measure', {
    warmup: options.warmup,
    seconds: options.seconds,
  });
  const cpu = (cpuSeconds(services) - cpuBefore) / (options.seconds + 0.001);
  const sentAfter = await generator.call('loadStop');
  const loadSeconds = (performance.now() - started) / 1000;
  const redis = redisBetween(redisBefore, await redisSnapshot(bench.redisUrl), {
    sends: sentAfter - sentBefore,
    seconds: loadSeconds,
  });
  const latency = await generator.call('latency', { graceMs: 1000 });
  const memory = rss.stop();
  const check = await generator.call('verify', { settleMs: 5_000 });
  const metrics = chatMetricsBetween(metricsBefore, await scrapeChatMetrics(services));
  return {
    ...window,
    latency,
    service: {
      cpu_core_share: round(cpu, 3),
      rss: memory,
      loop_delay_p99_ms: await loopP99(services),
      ...metrics,
    },
    redis,
    delivery_check: check,
  };
}

/** The services' event-loop delay since the last call (the largest of them). */
async function loopDelay(services) {
  const stats = await Promise.all(services.map((s) => s.loopDelay()));
  return {
    p99_ms: Math.max(...stats.map((s) => s.p99_ms)),
    max_ms: Math.max(...stats.map((s) => s.max_ms)),
  };
}

const loopP99 = async (services) => (await loopDelay(services)).p99_ms;

/**
 * (b) then (c) on the same open clients: latency under 500 sends/s, then the same with one client
 * in a hundred that never reads.
 */
export async function latencyScenarios(bench, { stalled }) {
  const { generator, options } = bench;
  const { specs, pairs } = await clientsOf(bench, options.members);
  const opened = await generator.call('open', {
    specs,
    pairs,
    concurrency: OPEN_CONCURRENCY,
    sync: true,
  });
  await loopP99(bench.services); // start the service's loop statistics afresh
  const latency = {
    members: specs.length,
    conversations: pairs.length,
    ...(await measureLoad(bench, pairs)),
  };
  if (!stalled) {
    await generator.call('closeAll');
    return { latency, connect: opened };
  }
  const indexes = specs
    .map((s) => s.index)
    .filter((i) => i % STALLED_ONE_IN === STALLED_ONE_IN / 2);
  const ends = await generator.call('stall', { indexes });
  const withStalled = await measureLoad(bench, pairs);
  const queues = kernelQueues(ends);
  await generator.call('closeAll');
  return {
    latency,
    stalled: { stalled_clients: indexes.length, ...withStalled, stalled_backlog_in_kernel: queues },
    connect: opened,
  };
}

/**
 * (d) Every socket dropped at once while sends go on; every client reconnects, authenticates
 * and catches up (API.md's rule); then each must hold every stored message, none twice.
 */
export async function reconnectScenario(bench) {
  const { services, generator, options } = bench;
  const { specs, pairs } = await clientsOf(bench, options.sockets);
  const opened = await generator.call('open', {
    specs,
    pairs,
    concurrency: OPEN_CONCURRENCY,
    sync: true,
  });
  if (options.reconnectRate > 0) {
    await generator.call('loadStart', { pairs, rate: options.reconnectRate });
  }
  await sleep(options.warmup * 1000); // messages flow to connected clients first
  const metricsBefore = await scrapeChatMetrics(services);
  const cpuBefore = cpuSeconds(services);
  await loopP99(services);
  const overflowsBefore = listenOverflows();
  const reconnect = await generator.call('reconnect', {
    concurrency: options.reconnectConcurrency,
  });
  reconnect.listen_queue_overflows = (listenOverflows() ?? NaN) - (overflowsBefore ?? NaN);
  const cpuUsed = cpuSeconds(services) - cpuBefore;
  const cpu = cpuUsed / (reconnect.all_caught_up_ms / 1000);
  const loopP99Ms = await loopP99(services);
  await sleep(2_000); // sends go on after the storm
  await generator.call('loadStop');
  const check = await generator.call('verify', { settleMs: 10_000 });
  const metrics = chatMetricsBetween(metricsBefore, await scrapeChatMetrics(services));
  await generator.call('closeAll');
  return {
    sockets: specs.length,
    rate: options.reconnectRate,
    initial_connect: opened,
    reconnect,
    service: {
      cpu_core_share: round(cpu, 3),
      // per socket, the sends going on meanwhile included
      cpu_ms_per_reconnect: round((cpuUsed * 1000) / specs.length, 2),
      loop_delay_p99_ms: loopP99Ms,
      sockets_closed: metrics.sockets_closed,
    },
    delivery_check: check,
  };
}
