import { describe, expect, it } from 'vitest';
import { compactCount, formatTileProgress, shortDuration, windowProgressText } from '../../src/presentation/progress-text.js';

describe('windowProgressText', () => {
  it('counts windows and rows and estimates the rest from the average window so far', () => {
    expect(windowProgressText({ job: 'daily', done: 2, total: 10, rows: 1200, elapsedMs: 10_000 })).toBe('daily  2/10 windows, 1200 rows, ETA 40s');
  });

  it('says 1 window and 1 row, and ETA 0s at the last window', () => {
    expect(windowProgressText({ job: 'daily', done: 1, total: 1, rows: 1, elapsedMs: 5_000 })).toBe('daily  1/1 window, 1 row, ETA 0s');
  });
});

describe('formatTileProgress', () => {
  it('is "connecting…" before the first page', () => {
    expect(formatTileProgress({ job: 'daily', startedAt: 0 }, 1000)).toBe('daily  connecting…');
  });

  it('gives pages, rows, the rate over the whole run so far, the ETA and the retries', () => {
    const last = { job: 'daily', phase: 'page' as const, pageNumber: 1, pagesDone: 2, pagesTotal: 10, totalRows: 2000, rows: 400, retries: 1 };
    expect(formatTileProgress({ job: 'daily', startedAt: 0, last }, 2000)).toBe('daily  2/10 pages  400/2.0k rows  200 rows/s  ETA 8s  1 retry');
  });

  it('shows an unknown page total as ?', () => {
    const last = { job: 'daily', phase: 'page' as const, pageNumber: 0, pagesDone: 1, pagesTotal: undefined, totalRows: 0, rows: 0, retries: 0 };
    expect(formatTileProgress({ job: 'daily', startedAt: 0, last }, 1000)).toBe('daily  1/? pages  0/0 rows  0 rows/s');
  });
});

describe('compactCount and shortDuration', () => {
  it('shortens counts and durations the way the progress line shows them', () => {
    expect([compactCount(950), compactCount(12_345), compactCount(1_234_567)]).toEqual(['950', '12k', '1.2M']);
    expect([shortDuration(42_000), shortDuration(185_000), shortDuration(3_720_000), shortDuration(-5)]).toEqual(['42s', '3m05s', '1h02m', '0s']);
  });
});
