import { describe, expect, it } from 'vitest';
import { jobLabels, labelKey, labelValue } from '../../../src/sinks/bigquery/job-labels.js';

// BigQuery's rules: at most 63 characters of lowercase letters, digits, `_` and `-`; keys start with a letter.
const VALID_VALUE = /^[a-z0-9_-]{0,63}$/;
const VALID_KEY = /^[a-z][a-z0-9_-]{0,62}$/;

describe('labelValue', () => {
  it('lowercases and keeps letters, digits, underscores and dashes', () => {
    expect(labelValue('Daily_Incidents-2')).toBe('daily_incidents-2');
  });

  it('turns every other character into an underscore', () => {
    expect(labelValue('tile 42/ä.b:c')).toBe('tile_42___b_c');
    expect(labelValue('20240301T120000Z+abc')).toBe('20240301t120000z_abc');
  });

  it('cuts values to 63 characters and allows the empty value', () => {
    expect(labelValue('x'.repeat(100))).toBe('x'.repeat(63));
    expect(labelValue('')).toBe('');
  });
});

describe('labelKey', () => {
  it('keeps a key that starts with a letter and prefixes one that does not', () => {
    expect(labelKey('run_id')).toBe('run_id');
    expect(labelKey('2nd')).toBe('k_2nd');
    expect(labelKey('_x')).toBe('k__x');
  });

  it('is always a valid key, even when cut', () => {
    for (const key of ['9'.repeat(80), 'Ä', '-', 'Window']) expect(labelKey(key)).toMatch(VALID_KEY);
  });
});

describe('jobLabels', () => {
  it('names job, tile and run, and the window of a backfill', () => {
    const identity = {
      jobName: 'daily_severity',
      datasetId: 'ops',
      tableId: 't',
      runId: '20240301T120000Z-ab12',
      window: { from: '2024-01-01', to: '2024-01-08' },
    };
    expect(jobLabels(identity, 'Tile 7f3a/B')).toEqual({
      tilehouse_job: 'daily_severity',
      tile: 'tile_7f3a_b',
      run_id: '20240301t120000z-ab12',
      window: '2024-01-01_2024-01-08',
    });
  });

  it('has no window label outside a backfill, and every value is valid', () => {
    const labels = jobLabels({ jobName: 'j', datasetId: 'd', tableId: 't', runId: 'R'.repeat(90) }, 'tile-1');
    expect(Object.keys(labels)).toEqual(['tilehouse_job', 'tile', 'run_id']);
    for (const value of Object.values(labels)) expect(value).toMatch(VALID_VALUE);
  });
});
