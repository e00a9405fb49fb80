import { describe, expect, it } from 'vitest';
import { jobIdsOf } from '../../src/sinks/registry.js';
import type { SinkResult } from '../../src/sinks/sink.js';

const bigquery = (details: SinkResult['details']): SinkResult => ({ sink: 'bigquery', target: 'p.d.t', rows: 1, ...(details ? { details } : {}) });

describe("jobIdsOf (the summary's bigqueryJobIds, asked of each result's kind)", () => {
  it('names the publishing job first, then the load, each once across results', () => {
    const outputs = [bigquery({ jobId: 'copy_1', loadJobId: 'load_1' }), bigquery({ jobId: 'copy_2', loadJobId: 'load_1' })];
    expect(jobIdsOf(outputs)).toEqual(['copy_1', 'load_1', 'copy_2']);
  });

  it('skips ids that are empty or not text, and results without details', () => {
    expect(jobIdsOf([bigquery({ jobId: '', loadJobId: 7 }), bigquery(undefined), bigquery({ loadJobId: 'load_only' })])).toEqual(['load_only']);
  });

  it('names no job for a CSV result, whatever its details say', () => {
    const csv: SinkResult = { sink: 'csv', target: '/out/a.csv', rows: 1, details: { jobId: 'not-a-warehouse-job' } };
    expect(jobIdsOf([csv, bigquery({ jobId: 'copy_1' })])).toEqual(['copy_1']);
  });
});
