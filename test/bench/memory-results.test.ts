import { describe, expect, it } from 'vitest';
import { caseFigures, formatMemory, judgeMemory, MEMORY_CASES, memoryReport, pairedRatio, type CheckoutMemory } from '../../bench/memory-results.js';

const node = { nodeOptions: '--max-semi-space-size=8', nodeArgs: ['--liftoff-only'] };
const s = (peakRssMb: number, cpuMs = 100) => ({ peakRssMb, cpuMs });

function checkout(label: string, samples: CheckoutMemory['samples']): CheckoutMemory {
  return { label, root: `/work/${label}`, node, samples, firstRuns: {} };
}

describe('caseFigures', () => {
  it("divides each case's median peak RSS by bare node's median of the same run, and CPU by rows", () => {
    const figures = caseFigures({
      'bare node': [s(40), s(44), s(42)],
      'run 5 rows': [s(90), s(70), s(80)],
      'run 1M': [s(120, 4000), s(130, 6000), s(110, 5000)],
    });
    expect(figures.map((f) => f.name)).toEqual(['bare node', 'run 5 rows', 'run 1M']);
    const five = figures.find((f) => f.name === 'run 5 rows')!;
    expect(five.peakRssMb).toBe(80);
    expect(five.ratioToBare).toBeCloseTo(80 / 42, 10);
    expect(five.peakRssRuns).toEqual([90, 70, 80]);
    const million = figures.find((f) => f.name === 'run 1M')!;
    // Medians taken separately: the run with the median RSS need not be the one with the median CPU.
    expect(million.peakRssMb).toBe(120);
    expect(million.cpuMsPer1kRows).toBeCloseTo(5, 10);
    expect(figures.find((f) => f.name === 'bare node')!.cpuMsPer1kRows).toBeUndefined();
  });

  it('takes the mean of the middle two for an even number of runs', () => {
    const [, help] = caseFigures({ 'bare node': [s(40), s(50)], help: [s(60), s(70)] });
    expect(help!.peakRssMb).toBe(65);
    expect(help!.ratioToBare).toBeCloseTo(65 / 45, 10);
  });
});

describe('memoryReport and judgeMemory', () => {
  const current = checkout('this', { 'bare node': [s(40)], 'run 5 rows': [s(84)], 'run 100k': [s(122, 1050)], 'run 1M': [s(150, 10_600)] });
  const baseline = checkout('baseline', { 'bare node': [s(40)], 'run 5 rows': [s(100)], 'run 100k': [s(200, 1000)], 'run 1M': [s(280, 10_000)] });

  it('compares this checkout with the baseline case by case: RSS and CPU per row', () => {
    const report = memoryReport(1, [current, baseline]);
    const versus = Object.fromEntries(report.versusBaseline!.map((v) => [v.name, v]));
    expect(versus['run 100k']!.peakRss).toBeCloseTo(0.61, 10);
    expect(versus['run 100k']!.cpuPerRow).toBeCloseTo(1.05, 10);
    expect(versus['run 1M']!.cpuPerRow).toBeCloseTo(1.06, 10);
    expect(versus['run 1M']!.cpuPerRowPaired).toBeCloseTo(1.06, 10);
    expect(versus['run 5 rows']!.peakRss).toBeCloseTo(0.84, 10);
    expect(versus['bare node']!.cpuPerRow).toBeUndefined();
  });

  it("judges each figure against issue 44's thresholds, at the threshold met, just above it not", () => {
    const targets = judgeMemory(memoryReport(1, [current, baseline]));
    const met = Object.fromEntries(targets.map((t) => [t.target.replace(/ \(.*?\)/g, '').replace(', image flags', ''), t.met]));
    expect(met).toEqual({
      'peak RSS / bare node, run 5 rows': false, // 2.1
      'peak RSS MB, run 100k': false, // 122
      "CPU per row / baseline checkout's, run 100k": true, // 1.05 exactly
      'peak RSS MB, run 100k, c=1': null, // not measured
      "CPU per row / baseline checkout's, run 100k, c=1": null,
      'peak RSS MB, run 1M': true, // 150
      "CPU per row / baseline checkout's, run 1M": false, // 1.06
    });
    const atThresholds = checkout('this', {
      'bare node': [s(40)],
      'run 5 rows': [s(80)],
      'run 100k': [s(120)],
      'run 100k, c=1': [s(113.1)],
      'run 1M': [s(160.1)],
    });
    const judged = Object.fromEntries(judgeMemory(memoryReport(1, [atThresholds])).map((t) => [t.target.split(' (')[0], t.met]));
    expect(judged).toMatchObject({
      'peak RSS / bare node, run 5 rows': true,
      'peak RSS MB, run 100k': true,
      'peak RSS MB, run 100k, c=1': false,
      'peak RSS MB, run 1M': false,
    });
  });

  it('reports CPU targets as not measured without a baseline, and cases that did not run as not measured', () => {
    const targets = judgeMemory(memoryReport(1, [checkout('this', { 'bare node': [s(40)], 'run 5 rows': [s(60)] })]));
    expect(targets.filter((t) => t.met === null).map((t) => t.note)).toEqual([
      'not measured in this run',
      'no --memory-baseline given',
      'not measured in this run',
      'no --memory-baseline given',
      'not measured in this run',
      'no --memory-baseline given',
    ]);
    expect(targets.find((t) => t.target.includes('5 rows'))!.met).toBe(true);
  });

  it("prints every case with its ratio, target and the baseline's columns", () => {
    const text = formatMemory(memoryReport(1, [current, baseline]));
    expect(text).toContain('this (/work/this): node --liftoff-only NODE_OPTIONS=--max-semi-space-size=8');
    const row = text.split('\n').find((line) => line.startsWith('run 100k'))!;
    expect(row.split(/\s{2,}/)).toEqual([
      'run 100k',
      '122.0',
      '3.05',
      '<= 120 MB',
      '1050',
      '10.50',
      '122',
      'n/a',
      '200.0',
      'n/a',
      '5.00',
      '10.00',
      '0.61',
      '1.050',
      '1.050',
    ]);
  });

  it("prints each run case's first run, into an empty output, beside the steady state's median", () => {
    const withFirst = { ...current, firstRuns: { 'run 100k': s(101) } };
    const row = formatMemory(memoryReport(1, [withFirst]))
      .split('\n')
      .find((line) => line.startsWith('run 100k'))!;
    expect(row.split(/\s{2,}/)).toEqual(['run 100k', '122.0', '3.05', '<= 120 MB', '1050', '10.50', '122', '101.0']);
  });

  it("names issue 44's targets: 5 rows <= 2.0x bare node, 100k <= 120 MB at c=4 and <= 113 MB at c=1, 1M at 50 ms c=8 <= 160 MB", () => {
    expect(MEMORY_CASES.filter((c) => c.maxRatio !== undefined || c.maxMb !== undefined).map((c) => [c.run, c.maxRatio ?? `${c.maxMb} MB`])).toEqual([
      [{ rows: 5, latencyMs: 0, concurrency: 4 }, 2.0],
      [{ rows: 100_000, latencyMs: 0, concurrency: 4 }, '120 MB'],
      [{ rows: 100_000, latencyMs: 0, concurrency: 1 }, '113 MB'],
      [{ rows: 1_000_000, latencyMs: 50, concurrency: 8 }, '160 MB'],
    ]);
  });
});

describe('the Parquet and gs:// cases (--memory-sinks) and the breakdown (--memory-breakdown)', () => {
  it("judges a 1M-row run into Parquet (<= 1.15) and into gs:// (<= 1.10) against the same checkout's CSV run", () => {
    const report = memoryReport(1, [checkout('this', { 'bare node': [s(40)], 'run 1M': [s(100)], 'run 1M, Parquet': [s(115)], 'run 1M, gs://': [s(111)] })]);
    const sinks = judgeMemory(report).filter((t) => t.target.includes('/ run 1M (CSV)'));
    expect(sinks.map((t) => [t.target, t.met])).toEqual([
      ['peak RSS, run 1M, Parquet / run 1M (CSV), image flags', true], // 1.15 exactly
      ['peak RSS, run 1M, gs:// / run 1M (CSV), image flags', false], // 1.11
    ]);
    // Without the CSV run there is nothing to compare with.
    expect(judgeMemory(memoryReport(1, [checkout('this', { 'run 1M, Parquet': [s(115)] })])).some((t) => t.target.includes('Parquet'))).toBe(false);
  });

  it("prints each case's breakdown as medians in MB, code and trusted spaces together", () => {
    const MB = 1024 * 1024;
    const breakdown = (rss: number) => ({
      rss: rss * MB,
      heapCommitted: 50 * MB,
      heapUsed: 20 * MB,
      external: 6 * MB,
      arrayBuffers: 4 * MB,
      spaces: {
        new: { size: 16 * MB, used: MB },
        old: { size: 28 * MB, used: 15 * MB },
        code: { size: 2 * MB, used: MB },
        trusted: { size: 3 * MB, used: 2 * MB },
      },
      fileBacked: 51 * MB,
      anonymous: (rss - 51) * MB,
    });
    const samples = {
      'bare node': [s(40)],
      'run 100k': [
        { ...s(128), breakdown: breakdown(126) },
        { ...s(130), breakdown: breakdown(130) },
        { ...s(120), breakdown: breakdown(120) },
      ],
    };
    const text = formatMemory(memoryReport(3, [checkout('this', samples)]));
    const row = text.split('\n').filter((line) => line.startsWith('run 100k'))[1]!;
    expect(row.split(/\s{2,}/)).toEqual(['run 100k', '126.0', '51.0', '75.0', '50.0', '20.0', '16.0', '28.0', '5.0', '0.0', '6.0', '4.0']);
    // Without it, no second table.
    expect(formatMemory(memoryReport(1, [checkout('this', { 'bare node': [s(40)], 'run 100k': [s(128)] })]))).not.toContain('highest RSS sampled');
  });
});

describe('pairedRatio', () => {
  it("is the median of each round's ratio, so a slow round slows both sides of its pair alike", () => {
    // Round 2 ran on a loaded machine: both sides slow; ratios 1.02, 1.04, 1.00.
    expect(pairedRatio([102, 208, 100], [100, 200, 100])).toBeCloseTo(1.02, 10);
    // The ratio of medians would be misled by an unpaired outlier: 150/100 here.
    expect(pairedRatio([100, 150, 300], [100, 100, 290])).toBeCloseTo(1.0344827586, 8);
  });

  it('skips rounds one side lacks or measured as NaN, and has no value without a pair', () => {
    expect(pairedRatio([110, Number.NaN, 120], [100, 100])).toBeCloseTo(1.1, 10);
    expect(pairedRatio([1, 2], [])).toBeUndefined();
    expect(pairedRatio([1], [0])).toBeUndefined();
  });
});
