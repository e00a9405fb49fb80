import { describe, expect, it } from 'vitest';
import { formatReport } from '../../bench/format-report.js';
import { parseBenchOptions, type BenchOptions } from '../../bench/options.js';
import { groupRatios, judge, toFigure, type BenchReport } from '../../bench/results.js';
import type { ScenarioKind, ScenarioRun } from '../../bench/scenario-runs.js';

const run = (scenario: ScenarioKind, runMs: number, peakRssMb: number, cpuMs: number, phases: { prepare?: number; publish?: number } = {}): ScenarioRun => ({
  scenario,
  concurrency: 8,
  rows: 1_000_000,
  pages: 1000,
  wallMs: runMs + 500,
  startMs: 500,
  runMs,
  peakRssMb,
  cpuMs,
  sourceCpuMs: 1000,
  ...(phases.prepare === undefined ? {} : { sinkPrepareMs: phases.prepare }),
  ...(phases.publish === undefined ? {} : { sinkPublishMs: phases.publish }),
});

function report(figures: Record<string, ScenarioRun>): Omit<BenchReport, 'targets'> {
  const asFigures = Object.fromEntries(Object.entries(figures).map(([name, one]) => [name, toFigure([one])]));
  return {
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
    groups: [{ rows: 1_000_000, latencyMs: 50, figures: asFigures, ratios: groupRatios(asFigures, 4, 8) }],
  };
}

const icebergTargets = (partial: Omit<BenchReport, 'targets'>) => judge(partial).filter((target) => target.target.includes('Iceberg'));

describe('bench: the Iceberg sink against the Parquet sink on the same store', () => {
  it('divides rows/s, peak RSS and CPU per row of iceberg by parquet (local) and of iceberg-s3 by parquet-s3, at the target concurrency', () => {
    const { ratios } = report({
      'parquet@8': run('parquet', 20_000, 200, 10_000),
      'iceberg@8': run('iceberg', 25_000, 220, 12_000),
      'parquet-s3@8': run('parquet-s3', 40_000, 300, 20_000),
      'iceberg-s3@8': run('iceberg-s3', 40_000, 360, 22_000),
    }).groups[0]!;
    expect(ratios['iceberg/parquet@8']).toBeCloseTo(0.8, 10);
    expect(ratios['rss iceberg/parquet@8']).toBeCloseTo(1.1, 10);
    expect(ratios['cpu iceberg/parquet@8']).toBeCloseTo(1.2, 10);
    expect(ratios['iceberg-s3/parquet-s3@8']).toBeCloseTo(1, 10);
    expect(ratios['rss iceberg-s3/parquet-s3@8']).toBeCloseTo(1.2, 10);
    expect(ratios['parquet-s3/parquet@8']).toBeCloseTo(0.5, 10);
  });

  it('judges >= 0.9 rows/s and <= 1.15 peak RSS per store, and leaves a store not measured as not measured', () => {
    const targets = icebergTargets(
      report({
        'parquet@8': run('parquet', 20_000, 200, 10_000),
        'iceberg@8': run('iceberg', 25_000, 220, 12_000),
      }),
    );
    expect(targets.map((target) => [target.target, target.value === null ? null : Number(target.value.toFixed(3)), target.threshold, target.met])).toEqual([
      ['rows/s, tilehouse→Iceberg / →Parquet, local, 1M rows, 50 ms, concurrency 8', 0.8, '>= 0.9', false],
      ['peak RSS, tilehouse→Iceberg / →Parquet, local, 1M rows, 50 ms, concurrency 8', 1.1, '<= 1.15', true],
      ['rows/s, tilehouse→Iceberg / →Parquet, s3:// (moto), 1M rows, 50 ms, concurrency 8', null, '>= 0.9', null],
      ['peak RSS, tilehouse→Iceberg / →Parquet, s3:// (moto), 1M rows, 50 ms, concurrency 8', null, '<= 1.15', null],
    ]);
  });

  it("prints each Parquet and Iceberg run's prepare and its commit (the publish) from the summary's timings", () => {
    const partial = report({
      'parquet@8': run('parquet', 20_000, 200, 10_000, { prepare: 300, publish: 2 }),
      'iceberg@8': run('iceberg', 21_000, 210, 10_500, { prepare: 350, publish: 120 }),
    });
    const text = formatReport({ ...partial, targets: judge(partial) });
    expect(text).toMatch(/\(parquet\) tilehouse → Parquet .*prepare 0\.30 s, publish 0\.00 s/);
    expect(text).toMatch(/\(iceberg\) → Iceberg, JDBC catalog, 2nd night .*prepare 0\.35 s, commit 0\.12 s/);
    expect(text).toContain('iceberg/parquet@8 0.95');
  });

  it('takes iceberg, iceberg-s3 and parquet-s3 as scenarios', () => {
    const options = parseBenchOptions(['--scenarios', 'parquet,iceberg,parquet-s3,iceberg-s3']) as BenchOptions;
    expect([...options.scenarios]).toEqual(['parquet', 'iceberg', 'parquet-s3', 'iceberg-s3']);
  });
});
