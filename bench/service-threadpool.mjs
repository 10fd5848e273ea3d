// Imported first by bench/run.mjs. The raw argon2id figure, login's ceiling, runs in the bench
// process: with Node's default pool of 4 threads on 2 cores each hash costs ~8% more CPU (and 4
// working sets crowd the cache) than in the service, whose pool is the number of cores
// (src/main.cts), so the ceiling came out low and login's share high. libuv sizes its pool once,
// at its first use, which loading these modules already is: the bench re-runs itself with the
// service's size set from the start.
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

if (process.env.UV_THREADPOOL_SIZE === undefined) {
  const { status, signal } = spawnSync(
    process.execPath,
    [...process.execArgv, ...process.argv.slice(1)],
    {
      stdio: 'inherit',
      env: { ...process.env, UV_THREADPOOL_SIZE: String(availableParallelism()) },
    },
  );
  process.exit(status ?? (signal === null ? 1 : 128));
}
