// Runs one scenario (or the login storm) against the service and gathers everything the report
// shows: throughput and latency from autocannon; peak RSS, CPU time and event-loop delay of the
// service process.
import { combineLoads, runLoad } from './load.mjs';
import { watchPeakMemory } from './memory.mjs';
import { BUILDERS, LOGIN_CONNECTIONS } from './scenarios.mjs';
import { sleep } from './server.mjs';

/** The profile load running beside the login storm: modest and fixed. */
export const STORM_PROFILE = { connections: 4, overallRate: 100 };

/** @param {import('./load.mjs').Expectation} expect */
export const describeExpectation = (expect) =>
  expect.error ? `${expect.status} ${expect.error}` : String(expect.status);

/** autocannon leaves its last requests in flight: give the service time to finish them. */
const settle = (load) => sleep(Math.min(3000, Math.max(200, 2 * load.p99_ms)));

/**
 * @typedef {object} Interleave   run the scenario in slices, with other work before, between and after
 * @property {number} slices
 * @property {() => Promise<void>} between
 */

/**
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioSpec} scenario
 * @param {import('./scenarios.mjs').ScenarioContext} context
 * @param {number} durationSeconds
 * @param {Interleave} [interleave]
 */
export async function measureScenario(service, scenario, context, durationSeconds, interleave) {
  const built = await BUILDERS[scenario.key](context, scenario.connections);
  const options = {
    url: service.url,
    connections: scenario.connections,
    request: built.request,
    expect: scenario.expect,
  };
  await service.loopDelay(); // starts a fresh histogram
  const memory = watchPeakMemory(service);
  let cpu = 0;
  /** @type {import('./load.mjs').LoadResult & { slices?: number }} */
  let load;
  if (interleave) {
    /** @type {number[]} */
    const latencies = [];
    const parts = [];
    await interleave.between();
    for (let i = 0; i < interleave.slices; i++) {
      const cpuBefore = service.cpuSeconds();
      const part = await runLoad({
        ...options,
        durationSeconds: durationSeconds / interleave.slices,
        latencies,
      });
      await settle(part);
      cpu += service.cpuSeconds() - cpuBefore;
      parts.push(part);
      await interleave.between();
    }
    load = { ...combineLoads(parts, latencies), slices: interleave.slices };
  } else {
    const cpuBefore = service.cpuSeconds();
    load = await runLoad({ ...options, durationSeconds });
    await settle(load);
    cpu = service.cpuSeconds() - cpuBefore;
  }
  const { peak_rss_mib } = memory.stop();
  const loop = await service.loopDelay();
  return {
    key: scenario.key,
    name: scenario.name,
    note: scenario.note ?? '',
    connections: scenario.connections,
    expected_answer: describeExpectation(scenario.expect),
    ...load,
    peak_rss_mib,
    cpu_ms_per_request: Math.round(((cpu * 1000) / Math.max(1, load.sent)) * 100) / 100,
    loop_delay_p99_ms: loop.p99_ms,
    loop_delay_max_ms: loop.max_ms,
    memory_at_end_mib: loop.memory_mib,
    ...built.extra?.(),
  };
}

/**
 * GET /api/profile (the reference scenario `referenceKey`) in slices of `sliceSeconds`, to run
 * between the slices of a scenario whose throughput is compared to it: both sides of the ratio
 * then see the same machine. On this shared VM the host's speed moves by 10-25 % within a run, as
 * much as the margins the ratio targets are judged by.
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioContext} context
 * @param {import('./scenarios.mjs').ScenarioSpec} reference
 * @param {number} sliceSeconds
 */
export async function referenceSlices(service, context, reference, sliceSeconds) {
  const built = await BUILDERS[reference.key](context, reference.connections);
  /** @type {number[]} */
  const latencies = [];
  const parts = [];
  return {
    /** @type {() => Promise<void>} */
    async between() {
      const part = await runLoad({
        url: service.url,
        connections: reference.connections,
        request: built.request,
        expect: reference.expect,
        durationSeconds: sliceSeconds,
        latencies,
      });
      await settle(part);
      parts.push(part);
    },
    /** The reference over all its slices, as the report shows it beside the scenario. */
    result() {
      const load = combineLoads(parts, latencies);
      return {
        key: reference.key,
        connections: reference.connections,
        requests_per_second: load.requests_per_second,
        p99_ms: load.p99_ms,
        unexpected: load.unexpected,
        slices: parts.length,
      };
    },
  };
}

/**
 * A login storm saturating hashing, with a modest profile load beside it: the profile latency
 * shows whether hashing stays off the event loop.
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioContext} context
 * @param {number} durationSeconds
 */
export async function measureStorm(service, context, durationSeconds) {
  const login = await BUILDERS.login(context, LOGIN_CONNECTIONS);
  const profile = await BUILDERS.profile(context, STORM_PROFILE.connections);
  await service.loopDelay();
  const memory = watchPeakMemory(service);
  const [loginLoad, profileLoad] = await Promise.all([
    runLoad({
      url: service.url,
      durationSeconds,
      connections: LOGIN_CONNECTIONS,
      request: login.request,
      expect: { status: 200 },
    }),
    runLoad({
      url: service.url,
      durationSeconds,
      connections: STORM_PROFILE.connections,
      overallRate: STORM_PROFILE.overallRate,
      ipOffset: 2048,
      request: profile.request,
      expect: { status: 200 },
    }),
  ]);
  const { peak_rss_mib } = memory.stop();
  const loop = await service.loopDelay();
  await settle(loginLoad);
  return {
    login: { connections: LOGIN_CONNECTIONS, ...loginLoad },
    profile: {
      connections: STORM_PROFILE.connections,
      rate: STORM_PROFILE.overallRate,
      ...profileLoad,
    },
    peak_rss_mib,
    loop_delay: loop,
  };
}
