import { describe, expect, it } from 'vitest';
import { parseBenchOptions, SCENARIOS, type BenchOptions } from '../../bench/options.js';

const parse = (argv: string[]) => parseBenchOptions(argv) as BenchOptions;

describe('parseBenchOptions: the memory part', () => {
  it('--memory runs the memory part alone, three runs a case, with the baseline checkout given', () => {
    const options = parse(['--memory', '--memory-baseline', '/work/main-baseline']);
    expect([...options.scenarios]).toEqual(['memory']);
    expect(options.memoryRuns).toBe(3);
    expect(options.memoryBaseline).toBe('/work/main-baseline');
  });

  it('is part of a full run, once per case with --quick, and as many runs as --memory-runs says', () => {
    expect(parse([]).scenarios.has('memory')).toBe(true);
    expect([...parse([]).scenarios]).toEqual([...SCENARIOS]);
    expect(parse(['--quick']).memoryRuns).toBe(1);
    expect(parse(['--quick', '--memory-runs', '5']).memoryRuns).toBe(5);
    expect(parse(['--scenarios', 'memory']).memoryBaseline).toBeUndefined();
    // --memory with the same scenario named again is not a contradiction.
    expect([...parse(['--memory', '--scenarios', 'memory']).scenarios]).toEqual(['memory']);
  });

  it('refuses --memory with other scenarios, and a run count below 1', () => {
    expect(() => parse(['--memory', '--scenarios', 'csv'])).toThrow(/--memory runs the memory part only/);
    expect(() => parse(['--memory-runs', '0'])).toThrow(/--memory-runs must be at least 1/);
    expect(() => parse(['--memory-runs', 'two'])).toThrow(/--memory-runs: not a whole number/);
  });
});

describe('parseBenchOptions: the peers part', () => {
  it('is off unless asked for, with three runs of 100k rows at 0 ms and 1M at 50 ms', () => {
    expect(parse([]).peers).toBe(false);
    const options = parse(['--peers']);
    expect(options.peers).toBe(true);
    expect(options.peersRuns).toBe(3);
    expect(options.peersCases).toEqual([
      { rows: 100_000, latencyMs: 0 },
      { rows: 1_000_000, latencyMs: 50 },
    ]);
  });

  it('takes its cases as rows@latency and its run count', () => {
    const options = parse(['--peers', '--peers-cases', '10000@0, 20000@25', '--peers-runs', '1', '--items-per-page', '500']);
    expect(options.peersCases).toEqual([
      { rows: 10_000, latencyMs: 0 },
      { rows: 20_000, latencyMs: 25 },
    ]);
    expect(options.peersRuns).toBe(1);
    expect(options.itemsPerPage).toBe(500);
    expect(options.peersTilehouseConcurrency).toBeUndefined();
    expect(parse(['--peers', '--peers-tilehouse-concurrency', '1']).peersTilehouseConcurrency).toBe(1);
  });

  it('refuses a case that is not rows@latency, no rows, no runs, and other parts in the same run', () => {
    expect(() => parse(['--peers', '--peers-cases', '10000'])).toThrow(/--peers-cases: not rows@latency-ms: "10000"/);
    expect(() => parse(['--peers', '--peers-cases', '0@0'])).toThrow(/--peers-cases: not rows@latency-ms/);
    expect(() => parse(['--peers', '--peers-cases', '10k@0'])).toThrow(/--peers-cases/);
    expect(() => parse(['--peers', '--peers-runs', '0'])).toThrow(/--peers-runs must be at least 1/);
    expect(() => parse(['--peers', '--peers-tilehouse-concurrency', '0'])).toThrow(/--peers-tilehouse-concurrency must be at least 1/);
    expect(() => parse(['--peers', '--memory'])).toThrow(/--peers runs the peers part only/);
    expect(() => parse(['--peers', '--scenarios', 'csv'])).toThrow(/--peers runs the peers part only/);
  });
});

describe('parseBenchOptions: a second checkout beside (c)', () => {
  it('is off unless --baseline names a checkout, and leaves --memory-baseline to the memory part', () => {
    expect(parse([]).baseline).toBeUndefined();
    const options = parse(['--sizes', '1000000', '--latencies', '50', '--scenarios', 'transport,csv', '--baseline', '/tmp/base-519d1ad']);
    expect(options.baseline).toBe('/tmp/base-519d1ad');
    expect(options.memoryBaseline).toBeUndefined();
    expect(parse(['--memory', '--memory-baseline', '/a']).baseline).toBeUndefined();
  });
});

describe('parseBenchOptions: --rounds', () => {
  it('is unset by default (sizes above 100k run once) and a whole number of rounds when given', () => {
    expect(parse([]).rounds).toBeUndefined();
    expect(parse(['--rounds', '10']).rounds).toBe(10);
    expect(() => parse(['--rounds', '0'])).toThrow(/--rounds must be at least 1/);
  });
});
