import { describe, expect, it } from 'vitest';
import type { JudgedRun } from '../../src/history/read-history.js';
import type { RunRecord } from '../../src/history/run-record.js';
import { holesOf } from '../../src/history/window-holes.js';

/** A finished record of a run of day windows: those it ran, those that failed. */
function windowsRun(
  runId: string,
  startedAt: string,
  ran: Array<[string, string]>,
  failed: Array<[string, string]>,
  extra: Partial<RunRecord> = {},
): JudgedRun {
  const window = ([from, to]: [string, string]) => ({ from, to });
  const record: RunRecord = {
    version: 1,
    job: 'daily',
    tile: 'tile-1',
    runId,
    state: failed.length === 0 ? 'succeeded' : 'failed',
    trigger: 'backfill',
    startedAt,
    heartbeatAt: startedAt,
    owner: 'test',
    targets: [],
    definition: { fingerprint: 'f', tile: 'tile-1', values: {} },
    ...(ran.length === 0 ? {} : { windows: ran.map(window) }),
    ...(failed.length === 0 ? {} : { failedWindows: failed.map(window), error: { code: 'export_response_invalid', message: 'cut' } }),
    ...extra,
  };
  return { record, verdict: failed.length === 0 ? 'ok' : 'failed' };
}

/** The history lists records newest first. */
const newestFirst = (...records: JudgedRun[]) => [...records].reverse();

describe('holesOf', () => {
  it('lists a failed window that later runs did not take on, whatever else they ran', () => {
    const holes = holesOf(
      newestFirst(
        windowsRun(
          'bf-1',
          '2026-07-01T03:00:00.000Z',
          [
            ['2026-06-25', '2026-06-26'],
            ['2026-06-26', '2026-06-27'],
          ],
          [['2026-06-26', '2026-06-27']],
        ),
        windowsRun('bf-2', '2026-07-02T03:00:00.000Z', [['2026-06-20', '2026-06-21']], []),
      ),
    );
    expect(holes).toEqual([
      {
        from: '2026-06-26',
        to: '2026-06-27',
        step: 'day',
        failedIn: { runId: 'bf-1', trigger: 'backfill', startedAt: '2026-07-01T03:00:00.000Z', code: 'export_response_invalid' },
      },
    ]);
  });

  it('joins adjacent failed windows of one run, at its step', () => {
    const failed: Array<[string, string]> = [
      ['2026-06-01', '2026-06-08'],
      ['2026-06-08', '2026-06-15'],
    ];
    const run = windowsRun('bf-weeks', '2026-07-01T03:00:00.000Z', failed, failed, {
      backfill: { from: '2026-06-01', to: '2026-06-15', step: 'week', windows: 2 },
    });
    expect(holesOf([run]).map(({ from, to, step }) => [from, to, step])).toEqual([['2026-06-01', '2026-06-15', 'week']]);
  });

  it('leaves the days of a failed week that a later run of days did not fill', () => {
    const week = windowsRun('bf-week', '2026-07-01T03:00:00.000Z', [['2026-06-01', '2026-06-08']], [['2026-06-01', '2026-06-08']], {
      backfill: { from: '2026-06-01', to: '2026-06-08', step: 'week', windows: 1 },
    });
    const days = windowsRun(
      'bf-days',
      '2026-07-02T03:00:00.000Z',
      [
        ['2026-06-03', '2026-06-04'],
        ['2026-06-04', '2026-06-05'],
      ],
      [],
    );
    expect(holesOf(newestFirst(week, days)).map(({ from, to }) => [from, to])).toEqual([
      ['2026-06-01', '2026-06-03'],
      ['2026-06-05', '2026-06-08'],
    ]);
  });

  it('is none once a later run filled the window, and tells a window failed again once, by the last run that failed it', () => {
    const first = windowsRun('inc-1', '2026-07-01T02:00:00.000Z', [['2026-06-30', '2026-07-01']], [['2026-06-30', '2026-07-01']], { trigger: 'run' });
    const again = windowsRun('inc-2', '2026-07-02T02:00:00.000Z', [['2026-06-30', '2026-07-01']], [['2026-06-30', '2026-07-01']], { trigger: 'run' });
    expect(holesOf(newestFirst(first, again)).map((hole) => hole.failedIn.runId)).toEqual(['inc-2']);
    const filled = windowsRun(
      'inc-3',
      '2026-07-03T02:00:00.000Z',
      [
        ['2026-06-30', '2026-07-01'],
        ['2026-07-01', '2026-07-02'],
      ],
      [],
      { trigger: 'run' },
    );
    expect(holesOf(newestFirst(first, again, filled))).toEqual([]);
  });
});
