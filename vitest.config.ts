import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests start emulators on random ports; files run in parallel workers, which is fine on 2 cores.
    pool: 'forks',
  },
});
