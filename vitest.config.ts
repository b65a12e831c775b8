import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start emulators on random ports; files run in parallel workers. One per core, not vitest's
    // default of cores - 1, which is a single worker on the 2-core machines CI runs on: most test files
    // wait on sockets and child processes far more than they compute.
    pool: 'forks',
    maxWorkers: availableParallelism(),
    minWorkers: 1,
  },
});
