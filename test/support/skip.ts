import { describe, it, type TestFunction } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** Why the test cannot run on this machine (what it lacks), read by test/support/skip-reporter.ts. */
    skipReason?: string;
  }
}

/**
 * The one way a test is skipped for what the machine lacks (Biome's noSkippedTests refuses
 * `.skip` and `.skipIf` elsewhere): `blocker` says what is missing, or is null when nothing is
 * and the tests run. The reason rides in the task's meta to test/support/skip-reporter.ts, which
 * lists it, fails a skip that gives none, and fails every skip under CI. A test that finds out only
 * while running calls `context.skip(reason)`; the reporter reads that reason as well.
 */
export function describeUnless(blocker: string | null): (title: string, body: () => void) => void {
  return (title, body) => {
    if (blocker === null) describe(title, body);
    else describe(title, { skip: true, meta: { skipReason: blocker } }, body);
  };
}

/** `it`, or the same test skipped with `blocker` as its reason (see describeUnless). */
export function itUnless(blocker: string | null): (title: string, body: TestFunction, timeout?: number) => void {
  return (title, body, timeout) => {
    if (blocker === null) it(title, body, timeout);
    else it(title, { skip: true, meta: { skipReason: blocker }, timeout }, body);
  };
}

/** The blocker for a tool a `…OrSkip` helper found absent (`found` null), or null when it is there. */
export function missing(tool: string, found: unknown): string | null {
  return found === null ? `${tool} is not installed here (npm run setup:tools builds it)` : null;
}

/** The blocker for tests that read /proc, or null on Linux. */
export const NO_PROC = process.platform === 'linux' ? null : 'there is no /proc here (not Linux)';
