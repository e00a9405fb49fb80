import type { EvaluatedTable } from './query-evaluator.js';

/**
 * Evaluated results by (tile, query without paging). A client pages through one result with the
 * same query and a growing pageNumber; evaluating a million rows once per page would make the
 * sandbox, not the client, the bottleneck of the benchmark. Least recently used entries go first.
 */
export class ResultCache {
  private readonly entries = new Map<string, EvaluatedTable>();

  constructor(private readonly capacity = 8) {}

  getOrEvaluate(key: string, evaluate: () => EvaluatedTable): EvaluatedTable {
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const table = evaluate();
    this.entries.set(key, table);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return table;
  }

  get size(): number {
    return this.entries.size;
  }
}
