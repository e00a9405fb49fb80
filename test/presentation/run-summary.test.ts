import { describe, expect, it } from 'vitest';
import { formatRunSummary } from '../../src/presentation/run-summary.js';
import type { RunSummary, JobRunSummary } from '../../src/pipeline/job-summary.js';

const tile = (overrides: Partial<JobRunSummary>): JobRunSummary =>
  ({
    job: 'daily',
    tile: 't-1',
    status: 'succeeded',
    rows: 10,
    rowsDropped: 0,
    pages: 1,
    durationMs: 1200,
    columns: [],
    outputs: [],
    warnings: [],
    nulledValues: 0,
    retries: 0,
    reauthentications: 0,
    restarts: 0,
    ...overrides,
  }) as JobRunSummary;

const run = (tiles: JobRunSummary[]): RunSummary =>
  ({ runId: 'r1', startedAt: '2026-11-23T00:00:00.000Z', durationMs: 1500, tiles, succeeded: 0, failed: 0, partiallyPublished: 1 }) as RunSummary;

describe('formatRunSummary', () => {
  it("gives each tile one time line, the source and the read first, then each sink's phases, as status does; none without timings", () => {
    const timings = { 'prepare:csv': 120, 'publish:csv': 40, reading: 400, source: 8_900, 'prepare:postgres': 300, 'publish:postgres': 1_250 };
    const text = formatRunSummary(
      run([tile({ job: 'slow', timings }), tile({ job: 'failed', status: 'failed', error: { code: 'export_api_error', message: 'job failed: HTTP 500' } })]),
    );
    expect(text.split('\n')).toEqual([
      'run r1: 0 succeeded, 0 failed, 1 PARTIALLY PUBLISHED in 1.5 s',
      '  ok   slow (1.2 s): 10 rows, 1 page → ',
      '       time: source 8.9 s, reading 0.4 s, prepare csv 0.1 s, publish csv 0.0 s, prepare postgres 0.3 s, publish postgres 1.3 s',
      '  FAIL failed (1.2 s): export_api_error: HTTP 500',
      '',
    ]);
  });

  it('says which targets hold the new run, which the previous one, and which neither whole', () => {
    const text = formatRunSummary(
      run([
        tile({
          status: 'partially_published',
          outputs: [],
          mixed: ['p.ops.daily'],
          unpublished: ['/out/daily.csv'],
          error: { code: 'partially_published', message: 'job daily: p.ops.daily failed to publish after changing part of it' },
        }),
      ]),
    );
    expect(text.split('\n')).toEqual([
      'run r1: 0 succeeded, 0 failed, 1 PARTIALLY PUBLISHED in 1.5 s',
      '  PART daily (1.2 s): partially_published: p.ops.daily failed to publish after changing part of it',
      '       published (new run): none',
      '       changed in part (neither run whole): p.ops.daily',
      '       NOT published (previous run kept): /out/daily.csv; re-run this tile',
      '',
    ]);
  });

  it('names a target whose publish outcome is unknown on its own line, not as keeping the previous run', () => {
    const text = formatRunSummary(
      run([
        tile({
          status: 'partially_published',
          outputs: [{ sink: 'csv', target: '/out/daily.csv', rows: 10 }],
          outcomeUnknown: ['gs://exports/daily.csv'],
          unpublished: [],
          error: { code: 'partially_published', message: 'job daily: gs://exports/daily.csv failed to publish' },
        }),
      ]),
    );
    expect(text.split('\n')).toEqual([
      'run r1: 0 succeeded, 0 failed, 1 PARTIALLY PUBLISHED in 1.5 s',
      '  PART daily (1.2 s): partially_published: gs://exports/daily.csv failed to publish',
      '       published (new run): /out/daily.csv',
      '       outcome unknown (new run or previous, look before re-running): gs://exports/daily.csv',
      '       NOT published (previous run kept): none; re-run this tile',
      '',
    ]);
  });

  it('says when pages were told apart only by their rows, and is silent for an echo or a single page', () => {
    const text = formatRunSummary(
      run([
        tile({ pages: 3, pageIdentity: 'rows-digest', outputs: [{ sink: 'csv', target: '/out/a.csv', rows: 10 }] }),
        tile({ job: 'other', pages: 3, pageIdentity: 'echo' }),
        tile({ job: 'one', pageIdentity: 'single-page' }),
      ]),
    );
    expect(text.split('\n').slice(1, 3)).toEqual([
      '  ok   daily (1.2 s): 10 rows, 3 pages → /out/a.csv',
      "       pages told apart by their rows: the source's answers did not echo the page asked for",
    ]);
    expect(text).not.toMatch(/other[^\n]*\n {7}/);
    expect(text.match(/told apart/g)).toHaveLength(1);
  });
});
