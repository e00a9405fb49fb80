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
