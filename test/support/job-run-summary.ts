import type { JobRunSummary } from '../../src/pipeline/job-summary.js';

/** One job's run summary, succeeded, every count at its quiet value and no outputs; a test overrides the fields it is about. */
export function jobRunSummary(overrides: Partial<JobRunSummary> = {}): JobRunSummary {
  return {
    job: 'a',
    tile: 't',
    runId: 'r',
    status: 'succeeded',
    rows: 1,
    rowsDropped: 0,
    pages: 1,
    bytes: 10,
    durationMs: 1,
    columns: [],
    outputs: [],
    targets: [],
    bigqueryJobIds: [],
    warnings: [],
    nulledValues: 0,
    retries: 0,
    throttled: 0,
    tokenFetches: 1,
    reauthentications: 0,
    restarts: 0,
    ...overrides,
  };
}
