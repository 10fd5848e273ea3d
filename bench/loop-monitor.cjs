// Preloaded into the service process only (NODE_OPTIONS=--require=…/loop-monitor.cjs): the service
// does not expose its event-loop delay or memory detail, so this measures them from the inside. On
// SIGUSR2 it writes to $BENCH_LOOP_FILE, and starts over: the delay statistics since the previous
// SIGUSR2 (or start), process.memoryUsage() now, and where the memory was when the resident set
// was largest (process.memoryUsage() and V8's heap spaces, sampled every 100 ms). With
// $BENCH_HEAP_SNAPSHOT set, each SIGUSR2 also writes a heap snapshot there (after the statistics,
// so that the snapshot's own memory is not in them).
// CommonJS and --require, not --import: an ESM preload would start libuv's thread pool before
// src/main.cts sizes it.
const { writeFileSync } = require('node:fs');
const { monitorEventLoopDelay } = require('node:perf_hooks');
const v8 = require('node:v8');

const file = process.env.BENCH_LOOP_FILE;
const MEMORY_SAMPLE_MS = 100;

const mib = (bytes) => Math.round((bytes / 1048576) * 10) / 10;
const inMib = (record) => Object.fromEntries(Object.entries(record).map(([k, v]) => [k, mib(v)]));

/**
 * process.memoryUsage(), and each V8 heap space's resident (physical) and live (used) size, in
 * MiB; empty spaces left out.
 */
function memoryDetail() {
  const spaces = {};
  for (const space of v8.getHeapSpaceStatistics()) {
    if (space.physical_space_size === 0) continue;
    const name = space.space_name.replace(/_space$/, '');
    spaces[name] = { physical: mib(space.physical_space_size), used: mib(space.space_used_size) };
  }
  const heap = v8.getHeapStatistics();
  return {
    usage: inMib(process.memoryUsage()),
    heap_spaces: spaces,
    malloced_by_v8: mib(heap.malloced_memory),
    peak_malloced_by_v8: mib(heap.peak_malloced_memory),
  };
}

if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let sequence = 0;
  let peak = { rss: 0 };
  const samplePeak = () => {
    const rss = process.memoryUsage.rss();
    if (rss > peak.rss) peak = { rss, ...memoryDetail() };
  };
  setInterval(samplePeak, MEMORY_SAMPLE_MS).unref();
  const ms = (ns) => Math.round(ns / 1e4) / 100;
  process.on('SIGUSR2', () => {
    sequence += 1;
    const stats = {
      sequence,
      count: histogram.count,
      mean_ms: histogram.count > 0 ? ms(histogram.mean) : 0,
      p50_ms: ms(histogram.percentile(50)),
      p99_ms: ms(histogram.percentile(99)),
      max_ms: ms(histogram.max),
      memory_mib: Object.fromEntries(
        Object.entries(process.memoryUsage()).map(([k, v]) => [k, Math.round(v / 1048576)]),
      ),
      peak_memory: { rss_mib: mib(peak.rss), ...peak, rss: undefined },
    };
    if (process.env.BENCH_HEAP_SNAPSHOT) v8.writeHeapSnapshot(process.env.BENCH_HEAP_SNAPSHOT);
    writeFileSync(file, JSON.stringify(stats));
    histogram.reset();
    peak = { rss: 0 };
  });
}
