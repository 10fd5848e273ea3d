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

process.env.UV_THREADPOOL_SIZE ??= String(os.availableParallelism());

import('./server.js').catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
