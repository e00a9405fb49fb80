import { describe, expect, it } from 'vitest';
import { formatReport } from '../../bench/format-report.js';
import { groupRatios, roundOrder, toFigure, type BenchReport } from '../../bench/results.js';
import type { ScenarioKind, ScenarioRun } from '../../bench/scenario-runs.js';

const run = (scenario: ScenarioKind, runMs: number): ScenarioRun => ({
  scenario,
  concurrency: 8,
  rows: 1_000_000,
  pages: 1000,
  wallMs: runMs + 500,
  startMs: 500,
  runMs,
  peakRssMb: 140,
  cpuMs: 6000,
  sourceCpuMs: 1000,
});

describe('bench --baseline: a second checkout beside (c) in the same run', () => {
  const figures = Object.fromEntries(
    (
      [
        ['transport@8', run('transport', 8000)],
        ['csv@8', run('csv', 10_000)],
        ['csv-baseline@8', run('csv-baseline', 8_800)],
      ] as const
    ).map(([name, one]) => [name, toFigure([one])]),
  );
  const ratios = groupRatios(figures, 4, 8);

  it("gives each checkout's c/a against the same transport loop, and this one's rows/s over the baseline's", () => {
    expect(ratios['c/a@8']).toBeCloseTo(0.8, 10);
    expect(ratios['baseline c/a@8']).toBeCloseTo(8000 / 8800, 10);
    expect(ratios['c/baseline@8']).toBeCloseTo(0.88, 10);
  });

  it('has no baseline ratios when no baseline ran', () => {
    const alone = groupRatios({ 'transport@8': figures['transport@8']!, 'csv@8': figures['csv@8']! }, 4, 8);
    expect(Object.keys(alone).filter((name) => name.includes('baseline'))).toEqual([]);
  });

  it("names the baseline's row in the report", () => {
    const report: BenchReport = {
      settings: {
        itemsPerPage: 1000,
        concurrency: 4,
        targetConcurrency: 8,
        repeat: 1,
        node: 'v24',
        cpus: 2,
        tilehouse: '',
        deployedNodeOptions: '',
        deployedNodeArgs: [],
        sequentialClient: '',
        query: '',
      },
      groups: [{ rows: 1_000_000, latencyMs: 50, figures, ratios }],
      targets: [],
    };
    const text = formatReport(report);
    expect(text).toMatch(/^\(c\) of the --baseline checkout +8 .* 113,636 .* 0\.91 *$/m);
    expect(text).toContain('baseline c/a@8 0.91, c/baseline@8 0.88');
  });
});

describe('bench --rounds with --baseline: the two checkouts take turns right after the transport loop', () => {
  const plan = ['transport@4', 'csv@4', 'csv-baseline@4', 'transport@8', 'csv@8', 'csv-baseline@8', 'parquet@8'].map((name) => [name, name] as const);
  const names = (round: number) => roundOrder(plan, round).map(([name]) => name);

  it('runs this checkout first in odd rounds and the baseline first in even ones, at every concurrency', () => {
    expect(names(1)).toEqual(['transport@4', 'csv@4', 'csv-baseline@4', 'transport@8', 'csv@8', 'csv-baseline@8', 'parquet@8']);
    expect(names(2)).toEqual(['transport@4', 'csv-baseline@4', 'csv@4', 'transport@8', 'csv-baseline@8', 'csv@8', 'parquet@8']);
    expect(names(3)).toEqual(names(1));
  });

  it('leaves a plan without a baseline as it is', () => {
    const alone = plan.filter(([name]) => !name.startsWith('csv-baseline'));
    expect(roundOrder(alone, 2)).toEqual(alone);
  });
});
