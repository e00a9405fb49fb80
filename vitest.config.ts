import { defineConfig } from 'vitest/config';
import SkipReporter from './test/support/skip-reporter.js';

const INCLUDE = ['test/**/*.test.ts', 'sandbox/**/*.test.ts'];

/**
 * The files that keep a BigQuery emulator busy for most of their time (many runs a test, each a
 * load, a MERGE or a partition count; its SQL engine is CPU-bound): beside other files on a loaded
 * 2-core machine one test of theirs took over 30 s. They run one at a time, after the rest and
 * alone (vitest puts a project with one worker into a group of its own, run last), instead of
 * every limit of the suite being raised for them. Measured with `npm run test:under-load`.
 */
const EMULATOR_HEAVY = ['test/pipeline/publish-guard-bigquery.test.ts'];

/** What both projects share. Not `extends: true`: that would run the global setup once per project too. */
const shared = {
  testTimeout: 30_000,
  hookTimeout: 60_000,
  // A test without an assertion fails: one that can only pass proves nothing.
  expect: { requireAssertions: true },
};

export default defineConfig({
  test: {
    // Once for the whole run (one PostgreSQL cluster; what it provides reaches both projects).
    globalSetup: ['test/support/global-setup.ts'],
    // 2-core machines: more workers than cores only adds contention for the sandbox and emulator.
    maxWorkers: 2,
    // The skip reporter lists every skip with its reason and fails a run with a skip that gives none,
    // or with any skip under CI (test/support/skip.ts says how to skip).
    reporters: ['default', new SkipReporter()],
    projects: [
      { test: { ...shared, name: 'tilehouse', include: INCLUDE, exclude: EMULATOR_HEAVY } },
      { test: { ...shared, name: 'emulator-heavy', include: EMULATOR_HEAVY, fileParallelism: false } },
    ],
  },
});
