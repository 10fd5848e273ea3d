import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file starts its own app and database; two workers match the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
  },
});
