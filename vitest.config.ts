import { defineConfig } from 'vitest/config';
import SkipReporter from './test/support/skip-reporter.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'sandbox/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2-core machines: more workers than cores only adds contention for the sandbox and emulator.
    maxWorkers: 2,
    // A test without an assertion fails: one that can only pass proves nothing.
    expect: { requireAssertions: true },
    // The skip reporter lists every skip with its reason and fails a run with a skip that gives none,
    // or with any skip under CI (test/support/skip.ts says how to skip).
    reporters: ['default', new SkipReporter()],
  },
});
