import { describe, expect, it } from 'vitest';
import type { JudgedRun, RunVerdict } from '../../src/history/read-history.js';
import { baselineOf } from '../../src/history/run-baseline.js';
import type { RunRecord } from '../../src/history/run-record.js';

let day = 0;
/** A finished run of the job, a day after the one before. */
function run(rows: number, durationMs: number, verdict: RunVerdict = 'ok', extra: Partial<RunRecord> = {}): JudgedRun {
  day += 1;
  const startedAt = new Date(Date.UTC(2026, 10, 1, 2) + day * 86_400_000).toISOString();
  const record: RunRecord = {
    version: 1,
    job: 'nightly',
    tile: 'tile-1',
    runId: `run-${day}`,
    state: verdict === 'ok' ? 'succeeded' : 'failed',
    trigger: 'run',
    startedAt,
    heartbeatAt: startedAt,
    owner: 'test',
    targets: [],
    definition: { fingerprint: 'f', tile: 'tile-1', values: {} },
    rows,
    durationMs,
    ...extra,
  };
  return { record, verdict };
}

/** The baseline of the last of `runs` (oldest first), as status asks it of the history (newest first). */
function baselineOfLast(runs: JudgedRun[]) {
  const newestFirst = [...runs].reverse();
  return baselineOf(newestFirst[0]!, newestFirst);
}

describe('baselineOf', () => {
  it('is none for a first run, or for a run that did not read to its end', () => {
    expect(baselineOfLast([run(130, 1_000)])).toBeUndefined();
    expect(baselineOfLast([run(130, 1_000), run(0, 50, 'failed')])).toBeUndefined();
  });

  it('takes the median of the last seven successful runs before it (not failed ones, not backfills)', () => {
    const earlier = [
      run(10, 9_000), // the eighth before it: not among the last seven
      ...[100, 101, 102, 103, 104, 105].map((rows) => run(rows, 1_000)),
      run(0, 100, 'failed'),
      run(5_000, 60_000, 'ok', { trigger: 'backfill' }),
      run(106, 1_200),
    ];
    const baseline = baselineOfLast([...earlier, run(103, 1_100)])!;
    expect(baseline).toEqual({ runs: 7, rows: 103, durationMs: 1_000, timings: {}, farOff: [] });
  });

  it('flags a time 3 times the median and 1 s away, not one under 3 times it or less than 1 s away; a phase as the run', () => {
    expect(baselineOfLast([run(130, 1_000), run(130, 3_000)])!.farOff).toEqual([{ measure: 'durationMs', value: 3_000, median: 1_000 }]);
    expect(baselineOfLast([run(130, 1_000), run(130, 2_900)])!.farOff).toEqual([]);
    expect(baselineOfLast([run(130, 300), run(130, 1_200)])!.farOff).toEqual([]);
    // A third of the median, 1 s away: far off too.
    expect(baselineOfLast([run(130, 3_000), run(130, 1_000)])!.farOff).toEqual([{ measure: 'durationMs', value: 1_000, median: 3_000 }]);
    // Each phase the run measured, against the median of the runs that measured it.
    const phases = (source: number) => ({ timings: { source, reading: 100 } });
    const baseline = baselineOfLast([run(130, 1_000, 'ok', phases(500)), run(130, 1_000), run(130, 2_000, 'ok', phases(1_600))])!;
    expect(baseline.timings).toEqual({ source: 500, reading: 100 });
    expect(baseline.farOff).toEqual([{ measure: 'timings.source', value: 1_600, median: 500 }]);
  });

  it('flags rows more than half the median away, and any rows against a median of none', () => {
    expect(baselineOfLast([run(100, 1_000), run(50, 1_000)])!.farOff).toEqual([]);
    expect(baselineOfLast([run(100, 1_000), run(49, 1_000)])!.farOff).toEqual([{ measure: 'rows', value: 49, median: 100 }]);
    expect(baselineOfLast([run(100, 1_000), run(151, 1_000)])!.farOff).toEqual([{ measure: 'rows', value: 151, median: 100 }]);
    expect(baselineOfLast([run(0, 1_000), run(3, 1_000)])!.farOff).toEqual([{ measure: 'rows', value: 3, median: 0 }]);
    expect(baselineOfLast([run(0, 1_000), run(0, 1_000)])!.farOff).toEqual([]);
  });
});
