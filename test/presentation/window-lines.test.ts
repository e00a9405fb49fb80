import { describe, expect, it } from 'vitest';
import type { LoadedJob } from '../../src/config/load-config.js';
import { skippedWindowSummary, type JobRunSummary } from '../../src/pipeline/job-summary.js';
import type { CatchUpReport } from '../../src/pipeline/windows/catch-up.js';
import type { BackfillSummary } from '../../src/pipeline/windows/run-windows.js';
import { catchUpLines, LOCAL_CLOCK_NOTE, OPEN_WINDOW_NOTE, rerunCommands, windowLines } from '../../src/presentation/window-lines.js';
import { WindowStateUnreadableError } from '../../src/sinks/registry.js';

describe('rerunCommands', () => {
  it('merges contiguous failed windows into one command each', () => {
    const failed = [
      { from: '2026-03-01', to: '2026-03-02' },
      { from: '2026-03-02', to: '2026-03-03' },
      { from: '2026-03-05', to: '2026-03-06' },
    ];
    expect(rerunCommands(failed, 'daily', 'day', ['--config', 'c.yaml'])).toEqual([
      'tilehouse backfill --job daily --from 2026-03-01 --to 2026-03-03 --step day --config c.yaml',
      'tilehouse backfill --job daily --from 2026-03-05 --to 2026-03-06 --step day --config c.yaml',
    ]);
  });
});

describe('windowLines', () => {
  const tile = (overrides: Partial<JobRunSummary>): JobRunSummary => ({
    ...skippedWindowSummary({ name: 'daily', tile: 't', query: { items: [] }, sinks: [] } as unknown as LoadedJob, 'r', new WindowStateUnreadableError('x')),
    error: undefined,
    ...overrides,
  });
  const summary = (windows: BackfillSummary['windows'], extra: Partial<BackfillSummary> = {}): BackfillSummary => ({
    job: 'daily',
    runId: 'r',
    clock: { basis: 'source', offsetSeconds: 0 },
    tokenFetches: 1,
    exact: true,
    windows,
    failed: windows.filter((window) => window.summary.status !== 'succeeded').map((window) => window.window),
    ...extra,
  });
  const day = (from: string, to: string) => ({ from, to });

  it('gives each window its rows and targets, or its error, with its warnings and the re-run commands', () => {
    const lines = windowLines(
      summary([
        {
          window: day('2026-07-01', '2026-07-02'),
          open: false,
          summary: tile({ status: 'succeeded', rows: 3, outputs: [{ sink: 'csv', target: 'out/2026-07-01.csv', rows: 3 }] }),
          warnings: ['all 2 rows read had a Day outside the window'],
        },
        {
          window: day('2026-07-02', '2026-07-03'),
          open: false,
          summary: tile({ status: 'failed', error: { code: 'disk_full', message: 'no space' } }),
          warnings: [],
        },
        {
          window: day('2026-07-03', '2026-07-04'),
          open: true,
          summary: tile({ status: 'succeeded', rows: 1, outputs: [{ sink: 'csv', target: 'out/2026-07-03.csv', rows: 1 }] }),
          warnings: [],
        },
      ]),
      ['tilehouse backfill --job daily --from 2026-07-02 --to 2026-07-03 --step day'],
    );
    expect(lines).toEqual([
      '  2026-07-01..2026-07-02: 3 rows → out/2026-07-01.csv',
      '    warning: all 2 rows read had a Day outside the window',
      '  2026-07-02..2026-07-03: FAILED disk_full: no space',
      `  2026-07-03..2026-07-04: 1 row → out/2026-07-03.csv (open: ${OPEN_WINDOW_NOTE})`,
      'failed windows: 1; re-run only them with:',
      '  tilehouse backfill --job daily --from 2026-07-02 --to 2026-07-03 --step day',
    ]);
  });

  it("says when windows are exact only to a day and when they follow this machine's clock", () => {
    expect(windowLines(summary([], { exact: false, clock: { basis: 'local' } }), [])).toEqual([
      '  note: the job names no backfill.bucketColumn, so each window is exact only to within one day',
      `  note: ${LOCAL_CLOCK_NOTE}`,
    ]);
  });

  it('marks a partially published window apart from a failed one', () => {
    const [line] = windowLines(
      summary([
        {
          window: day('2026-07-01', '2026-07-02'),
          open: false,
          summary: tile({ status: 'partially_published', error: { code: 'publish_partial', message: 'a' } }),
          warnings: [],
        },
      ]),
      [],
    );
    expect(line).toBe('  2026-07-01..2026-07-02: PARTIALLY PUBLISHED publish_partial: a');
  });
});

describe('catchUpLines', () => {
  const report = (extra: Partial<CatchUpReport>): CatchUpReport => ({
    job: 'daily',
    today: '2026-07-05',
    firstUnpublished: '2026-07-03',
    firstRun: false,
    lookbackDays: 0,
    maxWindows: 2,
    reason: '2 windows 2026-07-03..2026-07-05: resume after 2026-07-02 (the last day every target holds)',
    windows: [],
    failed: [],
    left: [],
    open: [],
    warnings: [],
    ...extra,
  });

  it('is one line when all went well', () => {
    expect(catchUpLines(report({}))).toBe('  incremental daily: 2 windows 2026-07-03..2026-07-05: resume after 2026-07-02 (the last day every target holds)\n');
  });

  it('adds the local clock, warnings, the open days, the failed windows and what was left, in that order', () => {
    const text = catchUpLines(
      report({
        clock: { basis: 'local' },
        warnings: ['empty window'],
        open: [{ from: '2026-07-05', to: '2026-07-06' }],
        failed: [{ from: '2026-07-03', to: '2026-07-04' }],
        left: [
          { from: '2026-07-06', to: '2026-07-07' },
          { from: '2026-07-07', to: '2026-07-08' },
        ],
      }),
    );
    expect(text.split('\n').slice(1)).toEqual([
      `       note: ${LOCAL_CLOCK_NOTE}`,
      '       warning: empty window',
      `       open: 2026-07-05: ${OPEN_WINDOW_NOTE}`,
      '       1 window failed; the next run starts again at 2026-07-03',
      '       warning: 2 day windows (2026-07-06..2026-07-08) left for the next run (maxWindows 2)',
      '',
    ]);
  });

  it('counts several failed windows in the plural', () => {
    expect(
      catchUpLines(
        report({
          failed: [
            { from: '2026-07-03', to: '2026-07-04' },
            { from: '2026-07-04', to: '2026-07-05' },
          ],
        }),
      ),
    ).toContain('2 windows failed; the next run starts again at 2026-07-03');
  });
});
