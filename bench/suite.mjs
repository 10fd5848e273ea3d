// The scenario run: every selected scenario in order, raw argon2id beside login, the login storm.
import { CHAT_KEYS, prepareChat } from './chat.mjs';
import { DIRECTORY_KEYS, DIRECTORY_SIZE, prepareDirectory } from './directory.mjs';
import { combineRawVerify, measureRawVerify, storedHash } from './hashing.mjs';
import { runLoad } from './load.mjs';
import { measureScenario, measureStorm, referenceSlices, STORM_PROFILE } from './measure.mjs';
import { BUILDERS, LOGIN_CONNECTIONS, SCENARIOS } from './scenarios.mjs';
import { sleep } from './server.mjs';

/** Every key --only accepts, in the order they run. */
export const ALL = [
  'bare',
  'profile',
  'login',
  'raw',
  'refresh',
  'confirm',
  'change',
  'register',
  'storm',
  ...DIRECTORY_KEYS,
  ...CHAT_KEYS,
  'memory',
  'realtime', // bench/realtime.mjs, in its own process (run.mjs)
];
const RAW_VERIFY_MAX_SECONDS = 5;

/**
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioContext} context
 * @param {{ duration: number, selected: string[] }} options
 */
export async function runSuite(service, context, { duration, selected }) {
  const results = {
    scenarios: [],
    rawVerify: undefined,
    storm: undefined,
    /** @type {Omit<import('./directory.mjs').Directory, 'paths'> | undefined} */
    directory: undefined,
    /** @type {Omit<import('./chat.mjs').Chat, 'requests'> | undefined} */
    chat: undefined,
  };
  await warmUp(service, context);

  const rawSeconds = Math.min(duration, RAW_VERIFY_MAX_SECONDS);
  const stored = await storedHash();
  const measureRaw = (seconds) =>
    measureRawVerify({ concurrency: LOGIN_CONNECTIONS, durationSeconds: seconds, stored });
  // With login selected, raw verify runs in slices before, between and after slices of login, so
  // that both sides of their ratio see the same machine, however busy it is.
  const rawWithLogin = selected.includes('raw') && selected.includes('login');
  const loginSlices = Math.max(1, Math.round(duration / 2));
  const rawSlices = [];
  const interleaveRaw = {
    slices: loginSlices,
    between: async () => {
      rawSlices.push(await measureRaw(rawSeconds / (loginSlices + 1)));
    },
  };

  for (const key of selected) {
    if (key === 'raw') {
      if (!rawWithLogin) {
        console.log(`raw argon2id verify, concurrency ${LOGIN_CONNECTIONS}, ${rawSeconds} s …`);
        results.rawVerify = combineRawVerify([await measureRaw(rawSeconds)]);
      }
      continue;
    }
    if (key === 'storm') {
      console.log(`login storm with GET /api/profile at ${STORM_PROFILE.overallRate} req/s …`);
      results.storm = await measureStorm(service, context, duration);
    } else {
      if (DIRECTORY_KEYS.includes(key) && context.directory === undefined) {
        results.directory = await seedDirectory(service, context);
        results.scenarios.push(await measure('profile10'));
      }
      if (CHAT_KEYS.includes(key) && context.chat === undefined) {
        results.chat = await seedChat(service, context, duration);
        results.scenarios.push(await measure('chatprofile'));
      }
      const withRaw = key === 'login' && rawWithLogin;
      const referenceKey = RATIO_REFERENCES[key];
      if (withRaw) {
        results.scenarios.push(await measure(key, interleaveRaw));
        results.rawVerify = combineRawVerify(rawSlices);
      } else if (referenceKey !== undefined) {
        results.scenarios.push(await measureBesideReference(key, referenceKey));
      } else {
        results.scenarios.push(await measure(key));
      }
    }
    await sleep(1000); // let the mail outbox and the garbage collector catch up
  }
  return results;

  /** @param {string} key @param {import('./measure.mjs').Interleave} [interleave] */
  async function measure(key, interleave) {
    const scenario = specOf(key);
    console.log(
      `${scenario.name}, ${scenario.connections} connections, ${duration} s` +
        (interleave ? ` in ${loginSlices} slices, raw argon2id verify around them …` : ' …'),
    );
    return measureScenario(service, scenario, context, duration, interleave);
  }

  /**
   * A scenario with a throughput target against GET /api/profile, in slices with slices of the
   * reference around them (half as long: the reference's rate varies less); the scenario's result
   * carries that reference. Its requests/s, latencies and CPU per request are its own slices'; its
   * peak RSS and event-loop delay cover the reference slices too (one watch over the whole run).
   * @param {string} key @param {string} referenceKey
   */
  async function measureBesideReference(key, referenceKey) {
    const scenario = specOf(key);
    const slices = Math.max(1, Math.round(duration / 2));
    const reference = await referenceSlices(
      service,
      context,
      specOf(referenceKey),
      duration / slices / 2,
    );
    console.log(
      `${scenario.name}, ${scenario.connections} connections, ${duration} s in ${slices} ` +
        `slices, ${referenceKey} around them …`,
    );
    const interleave = { slices, between: reference.between };
    const result = await measureScenario(service, scenario, context, duration, interleave);
    return { ...result, reference: reference.result() };
  }
}

/**
 * The scenarios whose throughput is judged against GET /api/profile, and the reference scenario
 * each is measured beside (bench/targets.mjs).
 * @type {Record<string, string>}
 */
const RATIO_REFERENCES = {
  ...Object.fromEntries(DIRECTORY_KEYS.map((key) => [key, 'profile10'])),
  send: 'chatprofile',
};

/** @param {string} key */
const specOf = (key) =>
  /** @type {import('./scenarios.mjs').ScenarioSpec} */ (SCENARIOS.find((s) => s.key === key));

/**
 * Seeds the directory once, before the first directory scenario; the report keeps everything
 * about it but the request paths.
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioContext} context
 */
async function seedDirectory(service, context) {
  console.log(`seeding ${DIRECTORY_SIZE} influencer profiles straight into the database …`);
  const token = context.seed.profileToken;
  context.directory = await prepareDirectory(context.database, { url: service.url, token });
  const { profiles, seed_seconds, rare_substrings, rare_texts, plans } = context.directory;
  console.log(`seeded and analyzed in ${seed_seconds} s`);
  await sleep(1000);
  return { profiles, seed_seconds, rare_substrings, rare_texts, plans };
}

/**
 * Seeds the chat once, before the first chat scenario, sized for `duration` (see chatPlan); the
 * report keeps everything about it but the requests and their tokens.
 * @param {import('./server.mjs').Service} service
 * @param {import('./scenarios.mjs').ScenarioContext} context
 * @param {number} duration
 */
async function seedChat(service, context, duration) {
  console.log('seeding the chat straight into the database …');
  context.chat = await prepareChat(context.database, service, { durationSeconds: duration });
  const chat = { ...context.chat };
  delete chat.requests;
  console.log(
    `seeded ${chat.counts.conversations} conversations, ${chat.counts.messages} messages and ` +
      `${chat.counts.users} accounts, and analyzed, in ${chat.seed_seconds} s`,
  );
  await sleep(1000);
  return chat;
}

/** A couple of seconds on the cheap paths, so the first scenario does not pay for the JIT. */
async function warmUp(service, context) {
  for (const key of ['bare', 'profile']) {
    const built = await BUILDERS[key](context, 8);
    await runLoad({
      url: service.url,
      durationSeconds: 1,
      connections: 8,
      request: built.request,
      expect: { status: 200 },
    });
  }
}
