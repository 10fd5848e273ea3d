// The real-time load generator, a process of its own (forked by bench/realtime.mjs, which talks
// to it over IPC: `{ id, command, args }` in, `{ id, result | error }` out). It holds the simulated
// apps (chat-client.mjs: a socket each, spread over 127.0.0.1–8, and the catch-up rule), sends the
// messages (send-load.mjs) over a bounded pool of keep-alive HTTP connections, and checks at the
// end that every app holds exactly the messages the service stored.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { ChatClient } from './chat-client.mjs';
import { JsonClient } from './http.mjs';
import { percentiles, SendLoad } from './send-load.mjs';

/** Kept-alive HTTP connections for the apps' catch-up requests, and as many for the sends. */
const HTTP_CONNECTIONS = Number(process.env.BENCH_HTTP_CONNECTIONS ?? 64);
/** How often a client whose socket was refused tries again (a real app backs off and retries). */
const CONNECT_ATTEMPTS = 5;
const RETRY_DELAY_MS = 250;

const http = new JsonClient(HTTP_CONNECTIONS);
/** @type {ChatClient[]} */
let clients = [];
/** @type {SendLoad | undefined} */
let load;
const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const elapsed = (since) => Math.round(performance.now() - since);

/** Runs `work` over `items`, at most `limit` at a time. */
async function eachLimit(items, limit, work) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Connects, retrying a refused socket; answers the attempts it took. */
async function connect(client) {
  for (let attempt = 1; ; attempt++) {
    try {
      await client.connect();
      return attempt;
    } catch (error) {
      if (attempt >= CONNECT_ATTEMPTS) throw error;
      await sleep(RETRY_DELAY_MS * attempt);
    }
  }
}

/**
 * Connects `list` (`concurrency` handshakes at a time) and, with `sync`, catches each up as an
 * app does after `ready`. Answers when the last was ready and when the last was caught up.
 */
async function connectAll(list, concurrency, sync) {
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  let readyMs = 0;
  let retries = 0;
  /** @type {number[]} */
  const caughtUp = [];
  let ready = 0;
  const progress = setInterval(() => {
    const at = `${(elapsed(started) / 1000).toFixed(1)} s`;
    console.error(`  ${at}: ${ready}/${list.length} ready, ${caughtUp.length} caught up`);
  }, 2_000);
  try {
    await eachLimit(list, concurrency, async (client) => {
      retries += (await connect(client)) - 1;
      ready += 1;
      readyMs = Math.max(readyMs, performance.now() - started);
      if (!sync) return;
      await client.sync(true);
      caughtUp.push(performance.now() - started);
    });
  } finally {
    clearInterval(progress);
  }
  return {
    sockets: list.length,
    ready_ms: Math.round(readyMs),
    caught_up: sync ? percentiles(caughtUp) : undefined,
    all_caught_up_ms: elapsed(started),
    retries,
    generator_cpu_core_share: cpuShare(cpuBefore, started),
  };
}

const listening = () => clients.filter((c) => c.ws !== undefined && !c.stalled);

const commands = {
  /** New clients, one per spec; `pairs` are the two members' indexes of each conversation. */
  async open({ specs, pairs, concurrency, sync }) {
    load ??= new SendLoad(new JsonClient(HTTP_CONNECTIONS), `rt${Date.now().toString(36)}`);
    const env = { http, onCreated: (c, frame, at) => load?.delivered(c, frame, at) };
    clients = specs.map((spec) => new ChatClient(spec, env));
    for (const [a, b] of pairs) {
      clients[a].peer = clients[b];
      clients[b].peer = clients[a];
    }
    return connectAll(clients, concurrency, sync);
  },

  /** These clients stop reading; answers their sockets' local ends (to find them in `ss`). */
  async stall({ indexes }) {
    return indexes.map((i) => {
      clients[i].stall();
      const socket = clients[i].ws?._socket;
      return `${socket?.localAddress}:${socket?.localPort}`;
    });
  },

  /** Starts sending; answers how many messages were sent so far (in all). */
  async loadStart({ pairs, rate }) {
    load?.start(
      pairs.map(([a, b]) => [clients[a], clients[b]]),
      rate,
    );
    return load?.sequence;
  },

  /** Waits `warmup` s, then measures for `seconds` s: the peers' latency from the 201. */
  async measure({ warmup, seconds }) {
    const target = /** @type {SendLoad} */ (load);
    await sleep(warmup * 1000);
    loop.reset();
    target.startMeasuring();
    const sentBefore = target.sequence;
    await sleep(seconds * 1000);
    target.stopMeasuring();
    const sent = target.sequence - sentBefore;
    return { sent, sends_per_second: Math.round(sent / seconds), generator_loop: loopStats() };
  },

  /** Stops sending once every answer is in; answers how many messages were sent in all. */
  async loadStop() {
    await load?.stop();
    return load?.sequence;
  },

  /** The latency figures of the last window, once late deliveries had `graceMs` to arrive. */
  async latency({ graceMs }) {
    const target = /** @type {SendLoad} */ (load);
    await sleep(graceMs);
    return {
      from_201: percentiles(target.latencies),
      delivered_before_the_201: target.beforeAnswer,
      from_send: percentiles(target.endToEnd),
      send_to_201: percentiles(target.answers),
      undelivered: target.undelivered(),
      refused: target.refused,
      max_sends_in_flight: target.maxInFlight,
    };
  },

  /** Every socket cut at once, then every client reconnects and catches up. */
  async reconnect({ concurrency }) {
    const list = clients.filter((c) => !c.stalled);
    for (const client of list) client.drop();
    return connectAll(list, concurrency, true);
  },

  /** Waits (up to `settleMs`) for the clients to hold every stored message, then compares. */
  async verify({ settleMs }) {
    const stored = /** @type {SendLoad} */ (load).stored;
    const deadline = performance.now() + settleMs;
    const behind = (c) => c.version < (stored.get(c.spec.conversationId)?.size ?? 0);
    while (performance.now() < deadline && listening().some((c) => behind(c) || c.fetching)) {
      await sleep(50);
    }
    return compare(listening(), stored);
  },

  /** Closes every socket. The sends' records stay: later clients catch up on those too. */
  async closeAll() {
    for (const client of clients) client.drop();
    clients = [];
    await sleep(500);
  },
};

/** Each client's applied messages against the stored ones of its conversation. */
function compare(list, stored) {
  const totals = { clients: list.length, messages_expected: 0, missing: 0, unexpected: 0 };
  const events = { stale_dropped: 0, gaps_fetched: 0, double_applied: 0, fetch_errors: 0 };
  for (const client of list) {
    const expected = stored.get(client.spec.conversationId) ?? new Map();
    totals.messages_expected += expected.size;
    for (const [version, id] of expected) {
      if (client.applied.get(version) !== id) totals.missing += 1;
    }
    for (const version of client.applied.keys()) {
      if (!expected.has(version)) totals.unexpected += 1;
    }
    events.stale_dropped += client.stale;
    events.gaps_fetched += client.gaps;
    events.double_applied += client.doubleApplied;
    if (client.error !== undefined) events.fetch_errors += 1;
  }
  const closed = {};
  for (const client of clients) {
    if (client.closedWith !== undefined)
      closed[client.closedWith] = (closed[client.closedWith] ?? 0) + 1;
  }
  return { ...totals, ...events, closed_by_server: closed };
}

/** The generator's own CPU since `before`, as a share of one core. */
function cpuShare(before, started) {
  const used = process.cpuUsage(before);
  return (
    Math.round(((used.user + used.system) / 1000 / (performance.now() - started)) * 1000) / 1000
  );
}

function loopStats() {
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  return { p99_ms: ms(loop.percentile(99)), max_ms: ms(loop.max) };
}

process.on('message', async ({ id, command, args }) => {
  if (command === 'exit') {
    for (const client of clients) client.drop();
    http.close();
    load?.http.close();
    process.send?.({ id, result: null }, () => process.exit(0));
    return;
  }
  try {
    process.send?.({ id, result: (await commands[command](args)) ?? null });
  } catch (error) {
    process.send?.({ id, error: String(error?.stack ?? error) });
  }
});
