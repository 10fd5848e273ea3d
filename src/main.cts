// The process entry: `npm start` runs dist/main.cjs. CommonJS on purpose: libuv reads
// UV_THREADPOOL_SIZE once, when its pool starts, and Node's ESM loader starts the pool while it
// loads the first module. A CommonJS entry loads synchronously, so this line runs first. (Under
// `npm run dev` and the tests, tsx's `--import` hook starts the pool earlier: there it has no effect.)
//
// One pool thread per core, and `password-hashing` runs at most that many hashes at once: the same
// threads then hash back to back. With Node's default of 4 threads on 2 cores, successive hashes
// hop between threads, which cost ~8% more CPU per login and ~10% fewer logins/s in the bench.
// Other pool work (WebCrypto JWT signing, DNS lookups) waits for at most one running hash (~10 ms).
import os = require('node:os');
import v8 = require('node:v8');

// better-sqlite3 13 ships binaries for Node 22 and newer; on older Node it crashes the process
// without a word as soon as the database opens. Node 22 before 22.12 lacks what the service uses
// (process.getBuiltinModule came in 22.3, require of ES modules unflagged in 22.12).
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  console.error(
    `Node ${process.version} is too old: the service runs on Node 22.12+, 24 or 26 (README, Run it).`,
  );
  process.exit(1);
}

process.env.UV_THREADPOOL_SIZE ??= String(os.availableParallelism());

// V8's memory saver: the heap grows in smaller steps and is collected sooner. Measured in the
// bench's memory scenario, peak RSS 163-172 -> 152-157 MiB, for no throughput we could measure
// (bench/README.md). Node 22's V8 does not have the flag.
if (major >= 24) v8.setFlagsFromString('--memory-saver-mode');

// No compile cache (module.enableCompileCache()): Node keeps every cached module's code in memory
// for the life of the process, 6 MiB resident, to save ~0.1 s of CPU at start (README).

import('./server.js').catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
