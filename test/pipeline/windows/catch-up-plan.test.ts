import { describe, expect, it } from 'vitest';
import { catchUpPlan, IncrementalStateAmbiguousError } from '../../../src/pipeline/windows/date-windows.js';

const settings = { startFrom: '2026-07-01', lookbackDays: 0, maxWindows: 31 };
const days = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => `2026-07-${String(from + index).padStart(2, '0')}`);
const held = (target: string, list: string[]) => ({ target, done: new Set(list) });
const froms = (plan: { windows: Array<{ from: string }> }) => plan.windows.map((window) => window.from);

describe('catchUpPlan', () => {
  it('starts a new job at startFrom and runs every day up to and including today, oldest first', () => {
    const plan = catchUpPlan('daily', settings, '2026-07-03', [held('a', [])]);
    expect(froms(plan)).toEqual(days(1, 3));
    expect(plan.windows.at(-1)).toEqual({ from: '2026-07-03', to: '2026-07-04' });
    expect(plan).toMatchObject({ firstRun: true, firstUnpublished: '2026-07-01', left: [] });
    expect(plan.reason).toBe('3 windows 2026-07-01..2026-07-04: first run: from incremental.startFrom 2026-07-01');
  });

  it('plans from startFrom when no target is read at all (nothing held, never "every day published")', () => {
    const plan = catchUpPlan('daily', settings, '2026-07-03', []);
    expect(froms(plan)).toEqual(days(1, 3));
    expect(plan).toMatchObject({ firstRun: true, firstUnpublished: '2026-07-01' });
  });

  it('resumes after the last day held, and runs nothing when every day up to today is held', () => {
    expect(froms(catchUpPlan('daily', settings, '2026-07-05', [held('a', days(1, 1))]))).toEqual(days(2, 5));
    const done = catchUpPlan('daily', settings, '2026-07-05', [held('a', days(1, 5))]);
    expect(done.windows).toEqual([]);
    expect(done.firstUnpublished).toBe('2026-07-06');
    expect(done.reason).toContain('every day up to today 2026-07-05 is published');
  });

  it('re-runs a day missing before later held ones (a failed day is never skipped)', () => {
    expect(froms(catchUpPlan('daily', settings, '2026-07-05', [held('a', ['2026-07-01', '2026-07-02', '2026-07-04', '2026-07-05'])]))).toEqual(days(3, 5));
  });

  it('exports lookbackDays held days again, never before startFrom', () => {
    const plan = catchUpPlan('daily', { ...settings, lookbackDays: 2 }, '2026-07-05', [held('a', days(1, 4))]);
    expect(froms(plan)).toEqual(days(3, 5));
    expect(plan.lookback.map((window) => window.from)).toEqual(days(3, 4));
    expect(plan.reason).toContain('lookback 2 days (2026-07-03..2026-07-05)');
    expect(froms(catchUpPlan('daily', { ...settings, lookbackDays: 7 }, '2026-07-02', [held('a', days(1, 2))]))).toEqual(days(1, 2));
  });

  it('caps a long catch-up at maxWindows, oldest first, and says what is left', () => {
    const plan = catchUpPlan('daily', { ...settings, maxWindows: 4 }, '2026-07-10', [held('a', days(1, 1))]);
    expect(froms(plan)).toEqual(days(2, 5));
    expect(plan.left.map((window) => window.from)).toEqual(days(6, 10));
    expect(plan.reason).toContain('capped at maxWindows 4: 5 left for the next run (2026-07-06..2026-07-11)');
  });

  it("runs nothing while startFrom is after the source's today", () => {
    const plan = catchUpPlan('daily', { ...settings, startFrom: '2026-08-01' }, '2026-07-10', [held('a', [])]);
    expect(plan.windows).toEqual([]);
    expect(plan.reason).toContain("incremental.startFrom 2026-08-01 is after the source's today 2026-07-10");
  });

  it('starts at the target that lags when targets are a day apart (a run stopped between two publishes)', () => {
    const plan = catchUpPlan('daily', settings, '2026-07-05', [held('csv', days(1, 3)), held('bq', days(1, 2))]);
    expect(froms(plan)).toEqual(days(3, 5));
  });

  it('refuses targets further apart than max(1, lookbackDays), with the backfill that makes them agree', () => {
    const run = () => catchUpPlan('daily', settings, '2026-07-10', [held('out/{date}.csv', days(1, 9)), held('p.d.daily', days(1, 2))], ['--config', 'c.yaml']);
    expect(run).toThrow(IncrementalStateAmbiguousError);
    expect(run).toThrow(expect.objectContaining({ code: 'incremental_state_ambiguous' }));
    expect(run).toThrow('tilehouse backfill --job daily --from 2026-07-03 --to 2026-07-10 --step day --config c.yaml');
    expect(run).toThrow(/out\/\{date\}\.csv holds every day up to 2026-07-09, p\.d\.daily lacks 2026-07-03/);
    // The same gap within the lookback is a run in flight, not a disagreement.
    expect(froms(catchUpPlan('daily', { ...settings, lookbackDays: 7 }, '2026-07-10', [held('a', days(1, 9)), held('b', days(1, 2))]))).toEqual(days(1, 10));
  });

  it('exports a day held only as open again whatever lookbackDays says, and never the closed day before it', () => {
    const state = { target: 'a', done: new Set(days(1, 4)), open: new Set(['2026-07-05']) };
    const plan = catchUpPlan('daily', settings, '2026-07-05', [state]);
    expect(froms(plan)).toEqual(['2026-07-05']);
    expect(plan).toMatchObject({ firstRun: false, firstUnpublished: '2026-07-05', lookback: [] });
    expect(plan.reopened).toEqual([{ from: '2026-07-05', to: '2026-07-06' }]);
    expect(plan.open).toEqual([{ from: '2026-07-05', to: '2026-07-06' }]);
    expect(plan.reason).toBe(
      '1 window 2026-07-05..2026-07-06: resume after 2026-07-04 (the last day every target holds); 2026-07-05 published while open: exported again',
    );
  });

  it('re-exports yesterday held as open (exported before it ended) on the next day, now closed, and today as open', () => {
    const plan = catchUpPlan('daily', settings, '2026-07-06', [{ target: 'a', done: new Set(days(1, 4)), open: new Set(['2026-07-05']) }]);
    expect(froms(plan)).toEqual(days(5, 6));
    expect(plan.reopened.map((window) => window.from)).toEqual(['2026-07-05']);
    expect(plan.open.map((window) => window.from)).toEqual(['2026-07-06']);
  });

  it('counts a job whose only output is an open day as run before (not a first run)', () => {
    const plan = catchUpPlan('daily', settings, '2026-07-01', [{ target: 'a', done: new Set<string>(), open: new Set(['2026-07-01']) }]);
    expect(plan.firstRun).toBe(false);
    expect(froms(plan)).toEqual(['2026-07-01']);
    expect(plan.reason).toBe(
      '1 window 2026-07-01..2026-07-02: resume at incremental.startFrom 2026-07-01 (no target holds it closed); 2026-07-01 published while open: exported again',
    );
  });
});
