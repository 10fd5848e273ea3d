/* global fetch */
// What the real-time scenarios read from outside the load generator: the generator itself (an RPC
// over the fork's IPC channel), the services' RSS over time, their /metrics, and the kernel's
// socket queues (`ss`), where a client that stopped reading keeps what it has not read.
import { execFileSync, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { MIB, round } from '../memory.mjs';

/** The load generator (clients.mjs) in its own process. */
export function forkGenerator() {
  const child = fork(fileURLToPath(new URL('./clients.mjs', import.meta.url)));
  let next = 0;
  /** @type {Map<number, { resolve: (v: any) => void, reject: (e: Error) => void }>} */
  const waiting = new Map();
  child.on('message', ({ id, result, error }) => {
    const call = waiting.get(id);
    waiting.delete(id);
    if (error !== undefined) call?.reject(new Error(`load generator: ${error}`));
    else call?.resolve(result);
  });
  child.once('exit', (code) => {
    for (const call of waiting.values()) call.reject(new Error(`load generator exited (${code})`));
  });
  return {
    /** @param {string} command @param {unknown} [args] @returns {Promise<any>} */
    call(command, args) {
      const id = next++;
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        child.send({ id, command, args });
      });
    },
    async exit() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.send({ id: -1, command: 'exit' });
      await exited;
    },
  };
}

/**
 * The summed RSS of `services`, sampled every `intervalMs` until stop().
 * @param {import('../server.mjs').Service[]} services
 */
export function sampleRss(services, intervalMs = 1000) {
  /** @type {number[]} */
  const samples = [];
  const sample = () => samples.push(services.reduce((sum, s) => sum + s.memory().rss, 0));
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      const mib = (bytes) => round(bytes / MIB);
      return {
        start_mib: mib(samples[0]),
        end_mib: mib(samples[samples.length - 1]),
        max_mib: mib(Math.max(...samples)),
        samples: samples.length,
      };
    },
  };
}

/** CPU seconds of `services` together. @param {import('../server.mjs').Service[]} services */
export const cpuSeconds = (services) => services.reduce((sum, s) => sum + s.cpuSeconds(), 0);

/**
 * The counters and histogram buckets of the chat metrics, summed over `services`.
 * @param {import('../server.mjs').Service[]} services
 */
export async function scrapeChatMetrics(services) {
  /** @type {Map<string, number>} */
  const values = new Map();
  for (const service of services) {
    const text = await (await fetch(`${service.url}/metrics`)).text();
    for (const line of text.split('\n')) {
      if (!line.startsWith('chat_')) continue;
      const at = line.lastIndexOf(' ');
      const key = line.slice(0, at);
      values.set(key, (values.get(key) ?? 0) + Number(line.slice(at + 1)));
    }
  }
  return values;
}

/**
 * Between two scrapes: the delivery-latency histogram's p50/p99 (the upper bound of the bucket
 * they fall in: publication after commit → write on the socket, inside the service), and the
 * sockets closed by reason.
 */
export function chatMetricsBetween(before, after) {
  const delta = (key) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
  const buckets = [...after.keys()]
    .filter((key) => key.startsWith('chat_delivery_latency_seconds_bucket'))
    .map((key) => ({ le: Number(/le="([^"]+)"/.exec(key)?.[1]), count: delta(key) }))
    .filter((b) => Number.isFinite(b.le))
    .sort((a, b) => a.le - b.le);
  const total = delta('chat_delivery_latency_seconds_count');
  const bound = (q) => {
    const bucket = buckets.find((b) => b.count >= q * total);
    return bucket === undefined ? undefined : bucket.le * 1000;
  };
  const closed = {};
  for (const key of after.keys()) {
    const reason = /^chat_sockets_closed_total\{reason="([^"]+)"\}/.exec(key)?.[1];
    if (reason !== undefined && delta(key) > 0) closed[reason] = delta(key);
  }
  return {
    events_delivered: total,
    delivery_p50_le_ms: bound(0.5),
    delivery_p99_le_ms: bound(0.99),
    sockets_closed: closed,
  };
}

/**
 * What the kernel holds for the connections whose client end is one of `clientEnds`
 * ("address:port"): the server side's send queue and the client side's receive queue, in KiB.
 */
export function kernelQueues(clientEnds) {
  const wanted = new Set(clientEnds);
  let output = '';
  try {
    output = execFileSync('ss', ['-Htn', 'state', 'established'], { encoding: 'utf8' });
  } catch {
    return undefined; // no ss here
  }
  let send = 0;
  let receive = 0;
  let maxPerClient = 0;
  const perClient = new Map();
  for (const line of output.split('\n')) {
    const [recvQ, sendQ, local, peer] = line.trim().split(/\s+/);
    if (peer === undefined) continue;
    if (wanted.has(peer)) {
      send += Number(sendQ);
      perClient.set(peer, (perClient.get(peer) ?? 0) + Number(sendQ));
    } else if (wanted.has(local)) {
      receive += Number(recvQ);
      perClient.set(local, (perClient.get(local) ?? 0) + Number(recvQ));
    }
  }
  for (const bytes of perClient.values()) maxPerClient = Math.max(maxPerClient, bytes);
  const kib = (bytes) => round(bytes / 1024);
  return {
    connections_found: perClient.size,
    server_send_queue_kib: kib(send),
    client_receive_queue_kib: kib(receive),
    max_per_client_kib: kib(maxPerClient),
  };
}

/**
 * The kernel's count of connections refused at a full listen queue (TcpExt ListenOverflows, the
 * whole machine): each one costs its client a SYN retransmission, a second or more.
 */
export function listenOverflows() {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    const at = lines.findIndex((line) => line.startsWith('TcpExt:'));
    const names = lines[at].split(/\s+/);
    const values = lines[at + 1].split(/\s+/);
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return undefined;
  }
}

/**
 * What Redis reports of itself (INFO): CPU, PUBLISH calls and their time, bytes sent, channels
 * subscribed, memory. Redis is the machine's: another client's traffic would count too.
 * @param {string | undefined} url
 */
export async function redisSnapshot(url) {
  if (url === undefined) return undefined;
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const text = await redis.info('all');
    const field = (name) => Number(new RegExp(`^${name}:([^\\r\\n]+)`, 'm').exec(text)?.[1] ?? 0);
    const stat = (command, key) =>
      Number(new RegExp(`^cmdstat_${command}:.*\\b${key}=(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return {
      cpu_s: field('used_cpu_user') + field('used_cpu_sys'),
      publish_calls: stat('publish', 'calls'),
      publish_usec: stat('publish', 'usec'),
      net_output_bytes: field('total_net_output_bytes'),
      pubsub_channels: field('pubsub_channels'),
      used_memory: field('used_memory'),
    };
  } finally {
    redis.disconnect();
  }
}

/** Redis's work between two snapshots, per send and as a share of its one core. */
export function redisBetween(before, after, { sends, seconds }) {
  if (before === undefined || after === undefined) return undefined;
  const publishes = after.publish_calls - before.publish_calls;
  const cpu = after.cpu_s - before.cpu_s;
  return {
    publishes_per_send: round(publishes / sends, 2),
    cpu_core_share: round(cpu / seconds, 3),
    // all of Redis's work per send: the sender's rate-limit scripts and the publishes
    cpu_us_per_send: round((cpu * 1e6) / sends, 1),
    publish_command_us: round((after.publish_usec - before.publish_usec) / publishes, 2),
    output_bytes_per_send: Math.round((after.net_output_bytes - before.net_output_bytes) / sends),
    channels: after.pubsub_channels,
  };
}

/** The kernel's slab memory (/proc/meminfo Slab), in bytes: socket structures live there. */
export function kernelSlab() {
  try {
    const text = readFileSync('/proc/meminfo', 'utf8');
    return Number(/^Slab:\s+(\d+) kB/m.exec(text)?.[1] ?? NaN) * 1024;
  } catch {
    return NaN;
  }
}
