import type { SourceEndpoint } from '../support/source-requests.js';

/** What the parent hands a baseline scenario process (as JSON in $BENCH_SCENARIO). */
export interface BaselineInput {
  endpoint: SourceEndpoint;
  itemsPerPage: number;
  concurrency: number;
  /** sequential only: where its CSV goes. */
  outFile?: string;
  /** sequential only: 0 = every page, else stop after this many (the parent extrapolates). */
  maxPages?: number;
}

/** What a baseline prints as its last stdout line. */
export interface BaselineResult {
  rows: number;
  pages: number;
  totalPages: number;
  /** From the token request to the last page handled, inside the process. */
  loopMs: number;
}

export function scenarioInput<T>(): T {
  const text = process.env.BENCH_SCENARIO;
  if (text === undefined) throw new Error('BENCH_SCENARIO is not set; scenarios are started by bench/run.ts');
  return JSON.parse(text) as T;
}
