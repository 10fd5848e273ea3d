import { defineConfig } from 'vitest/config';

// better-sqlite3 13 crashes the process without a word on Node older than 22, and Node 22 before
// 22.12 lacks what the service uses (src/main.cts, README).
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 12)) {
  throw new Error(
    `Node ${process.version} is too old: the tests run on Node 22.12+, 24 or 26 (e.g. export PATH="$(.ci/install-node 26.10.0)/bin:$PATH", then npm ci).`,
  );
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup/fast-check.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for a condition; 1 s (its default) is short on a busy 2-core machine.
    expect: { poll: { timeout: 10_000 } },
    // Each file starts its own app and database; two workers match the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
