import { describe, expect, it } from 'vitest';
import type { EvaluatedTable } from './query-evaluator.js';
import { ResultCache } from './result-cache.js';

const table = (totalRows: number): EvaluatedTable => ({ headers: [], dataTypes: [], rawDatetime: [], totalRows, row: () => [] });

describe('ResultCache', () => {
  it('evaluates a query once however many pages are read', () => {
    const cache = new ResultCache();
    let evaluations = 0;
    const evaluate = () => {
      evaluations++;
      return table(1_000_000);
    };
    for (let page = 0; page < 20; page++) expect(cache.getOrEvaluate('tile\nquery', evaluate).totalRows).toBe(1_000_000);
    expect(evaluations).toBe(1);
  });

  it('forgets the least recently used result beyond its capacity', () => {
    const cache = new ResultCache(2);
    const evaluated: string[] = [];
    const get = (key: string) => cache.getOrEvaluate(key, () => (evaluated.push(key), table(0)));
    get('a');
    get('b');
    get('a');
    get('c');
    get('a');
    get('b');
    expect(evaluated).toEqual(['a', 'b', 'c', 'b']);
    expect(cache.size).toBe(2);
  });
});
