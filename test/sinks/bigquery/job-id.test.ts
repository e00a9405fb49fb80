import { describe, expect, it } from 'vitest';
import { jobId, stagingTableId } from '../../../src/sinks/bigquery/job-id.js';

const identity = { jobName: 'open_incidents', datasetId: 'ops', tableId: 'open_incidents', runId: '20240301T120000Z-ab12' };

describe('jobId', () => {
  it('is the same for the same run and stage, so a retried insert is refused as a duplicate', () => {
    expect(jobId(identity, 'load')).toBe(jobId({ ...identity }, 'load'));
    expect(jobId(identity, 'load')).toBe('tilehouse_open_incidents_ops_open_incidents_20240301T120000Z-ab12_load');
    expect(jobId(identity, 'publish')).toBe('tilehouse_open_incidents_ops_open_incidents_20240301T120000Z-ab12_publish');
  });

  it('differs per run, table, backfill window and stage', () => {
    const ids = new Set([
      jobId(identity, 'load'),
      jobId(identity, 'publish'),
      jobId({ ...identity, runId: 'other' }, 'load'),
      jobId({ ...identity, tableId: 'other' }, 'load'),
      jobId({ ...identity, window: { from: '2024-01-01', to: '2024-01-02' } }, 'load'),
      jobId({ ...identity, window: { from: '2024-01-02', to: '2024-01-03' } }, 'load'),
    ]);
    expect(ids.size).toBe(6);
  });

  it('marks later attempts with their number', () => {
    expect(jobId(identity, 'publish', 1)).toBe(jobId(identity, 'publish'));
    expect(jobId(identity, 'publish', 2)).toBe(`${jobId(identity, 'publish')}_attempt2`);
  });

  it('replaces characters BigQuery does not allow in job ids', () => {
    expect(jobId({ ...identity, runId: '2024-03-01T12:00:00.000Z/ü' }, 'load')).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('stays within 1024 characters and unique when the parts are very long', () => {
    const long = jobId({ ...identity, runId: 'r'.repeat(2000) }, 'load', 3);
    const other = jobId({ ...identity, runId: `${'r'.repeat(1999)}s` }, 'load', 3);
    expect(long.length).toBeLessThanOrEqual(1024);
    expect(long).toMatch(/_attempt3$/);
    expect(long).not.toBe(other);
  });
});

describe('stagingTableId', () => {
  it('is derived from job, table, window and run id, in the target dataset', () => {
    expect(stagingTableId(identity)).toBe('_tilehouse_staging_open_incidents_open_incidents_20240301T120000Z_ab12');
    expect(stagingTableId({ ...identity, window: { from: '2024-01-01', to: '2024-01-02' } })).toBe(
      '_tilehouse_staging_open_incidents_open_incidents_2024_01_01_2024_01_02_20240301T120000Z_ab12',
    );
    expect(stagingTableId({ ...identity })).toBe(stagingTableId(identity));
  });

  it('differs per run, job, table and window', () => {
    const ids = new Set([
      stagingTableId(identity),
      stagingTableId({ ...identity, runId: 'other' }),
      stagingTableId({ ...identity, jobName: 'other' }),
      stagingTableId({ ...identity, tableId: 'other' }),
      stagingTableId({ ...identity, window: { from: '2024-01-01', to: '2024-01-02' } }),
    ]);
    expect(ids.size).toBe(5);
  });

  it('holds only letters, digits and underscores, within 1024 characters, and stays unique', () => {
    const long = stagingTableId({ ...identity, runId: `${'ü-'.repeat(1000)}a` });
    const other = stagingTableId({ ...identity, runId: `${'ü-'.repeat(1000)}b` });
    expect(long).toMatch(/^[A-Za-z0-9_]+$/);
    expect(long.length).toBeLessThanOrEqual(1024);
    expect(long).not.toBe(other);
  });
});
