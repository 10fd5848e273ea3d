// --soak: minutes of mixed traffic (profile reads, logins, refreshes, wrong-code confirms) while the
// service's RSS is sampled every 5 s; memory should stay flat once warmed up.
import { runLoad } from './load.mjs';
import { MIB, round } from './memory.mjs';
import { describeExpectation } from './measure.mjs';
import { BUILDERS, SCENARIOS } from './scenarios.mjs';

export const SOAK_WARM_UP_SECONDS = 30;
const SAMPLE_INTERVAL_MS = 5_000;

/** The mix: [scenario key, connections]. Logins are few: each one costs a full argon2id verify. */
const MIX = [
  ['profile', 4],
  ['login', 2],
  ['refresh', 4],
  ['confirm', 4],
];

/**
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioContext} context
 * @param {number} durationSeconds
 */
export async function runSoak(service, context, durationSeconds) {
  const loads = [];
  for (const [key, connections] of MIX) {
    const scenario = /** @type {import('./scenarios.mjs').ScenarioSpec} */ (
      SCENARIOS.find((s) => s.key === key)
    );
    loads.push({ scenario, connections, built: await BUILDERS[key](context, connections) });
  }

  await service.loopDelay(); // starts a fresh histogram
  const started = Date.now();
  /** @type {{ t_s: number, rss_mib: number }[]} */
  const samples = [];
  const sample = () =>
    samples.push({
      t_s: Math.round((Date.now() - started) / 1000),
      rss_mib: round(service.memory().rss / MIB),
    });
  sample();
  const timer = setInterval(sample, SAMPLE_INTERVAL_MS);
  const results = await Promise.all(
    loads.map(({ scenario, connections, built }, i) =>
      runLoad({
        url: service.url,
        durationSeconds,
        connections,
        ipOffset: i * 1024,
        request: built.request,
        expect: scenario.expect,
      }),
    ),
  );
  clearInterval(timer);
  sample();

  const loop = await service.loopDelay();

  // RSS jumps by argon2id's memory cost (7 MiB) per hash in flight, so single samples are noisy: compare the
  // median of a window just after the warm-up with the median of the last window.
  const warmUp = Math.min(SOAK_WARM_UP_SECONDS, durationSeconds / 4);
  const window = Math.max(SAMPLE_INTERVAL_MS / 1000, Math.min(60, (durationSeconds - warmUp) / 4));
  const startWindow = samples.filter((s) => s.t_s >= warmUp && s.t_s < warmUp + window);
  const endWindow = samples.filter((s) => s.t_s > durationSeconds - window);
  return {
    duration_s: durationSeconds,
    warm_up_s: warmUp,
    window_s: window,
    start_rss_mib: median(startWindow),
    end_rss_mib: median(endWindow),
    max_rss_mib: Math.max(...samples.map((s) => s.rss_mib)),
    loop_delay: loop,
    samples,
    loads: loads.map(({ scenario, connections }, i) => ({
      key: scenario.key,
      name: scenario.name,
      connections,
      expected_answer: describeExpectation(scenario.expect),
      ...results[i],
    })),
  };
}

/** @param {{ rss_mib: number }[]} samples */
function median(samples) {
  const sorted = samples.map((s) => s.rss_mib).sort((a, b) => a - b);
  if (sorted.length === 0) return 0;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle]
    : round((sorted[middle - 1] + sorted[middle]) / 2);
}
