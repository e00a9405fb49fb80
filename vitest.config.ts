import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'sandbox/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2-core machines: more workers than cores only adds contention for the sandbox and emulator.
    maxWorkers: 2,
  },
});
