// Preloaded into the service process only (NODE_OPTIONS=--require=…/loop-monitor.cjs): the service
// does not expose its event-loop delay, so this measures it from the inside. On SIGUSR2 it writes
// the delay statistics since the previous SIGUSR2 (or start), and process.memoryUsage(), to
// $BENCH_LOOP_FILE and starts over. CommonJS and --require, not --import: an ESM preload would
// start libuv's thread pool before src/main.cts sizes it.
const { writeFileSync } = require('node:fs');
const { monitorEventLoopDelay } = require('node:perf_hooks');

const file = process.env.BENCH_LOOP_FILE;

if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 5 });
  histogram.enable();
  let sequence = 0;
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
    };
    writeFileSync(file, JSON.stringify(stats));
    histogram.reset();
  });
}
