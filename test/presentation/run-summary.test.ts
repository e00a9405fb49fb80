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
