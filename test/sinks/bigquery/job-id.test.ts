import { describe, expect, it } from 'vitest';
import { loadJobId } from '../../../src/sinks/bigquery/job-id.js';

const identity = { jobName: 'open_incidents', datasetId: 'ops', tableId: 'open_incidents', runId: '20240301T120000Z-ab12' };

describe('loadJobId', () => {
  it('is the same for the same load, so a retried insert is refused as a duplicate', () => {
    expect(loadJobId(identity)).toBe(loadJobId({ ...identity }));
    expect(loadJobId(identity)).toBe('tilehouse_open_incidents_ops_open_incidents_20240301T120000Z-ab12');
  });

  it('differs per run, table and backfill window', () => {
    const ids = new Set([
      loadJobId(identity),
      loadJobId({ ...identity, runId: 'other' }),
      loadJobId({ ...identity, tableId: 'other' }),
      loadJobId({ ...identity, window: { from: '2024-01-01', to: '2024-01-02' } }),
      loadJobId({ ...identity, window: { from: '2024-01-02', to: '2024-01-03' } }),
    ]);
    expect(ids.size).toBe(5);
  });

  it('marks later attempts with their number', () => {
    expect(loadJobId(identity, 1)).toBe(loadJobId(identity));
    expect(loadJobId(identity, 2)).toBe(`${loadJobId(identity)}_attempt2`);
  });

  it('replaces characters BigQuery does not allow in job ids', () => {
    expect(loadJobId({ ...identity, runId: '2024-03-01T12:00:00.000Z/ü' })).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('stays within 1024 characters and unique when the parts are very long', () => {
    const long = loadJobId({ ...identity, runId: 'r'.repeat(2000) }, 3);
    const other = loadJobId({ ...identity, runId: `${'r'.repeat(1999)}s` }, 3);
    expect(long.length).toBeLessThanOrEqual(1024);
    expect(long).toMatch(/_attempt3$/);
    expect(long).not.toBe(other);
  });
});
