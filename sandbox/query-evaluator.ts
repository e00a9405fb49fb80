import { dateBucket } from './date-buckets.js';
import { countBits, type Dataset } from './dataset.js';
import { FIELDS, type RowId } from './fields.js';
import { compileFilter, type Predicate } from './filters.js';
import { compileExpression, type Compiled } from './formula-compiler.js';
import { parseFormula, readsFields, type Expression } from './formula-parser.js';
import { compileFormat } from './formats.js';
import { QueryError } from './query-error.js';
import type { SandboxQuery, SandboxQueryItem } from './query-schema.js';
import type { Value, ValueType } from './values.js';

export interface EvaluationContext {
  dataset: Dataset;
  /** The tenant host, for `format: incident_url`. */
  audience: string;
}

/** A fully evaluated, ordered result. Rows may be produced lazily (a million-row result is a row-id list). */
export interface EvaluatedTable {
  readonly headers: readonly string[];
  readonly dataTypes: readonly string[];
  /** Per column: cells are unformatted datetimes (epoch ms) that the wire format renders. */
  readonly rawDatetime: readonly boolean[];
  readonly totalRows: number;
  row(index: number): Value[];
}

export const AGGREGATES = ['count', 'sum', 'avg', 'min', 'max'] as const;

/**
 * What an item is in its query. In a query without grouped or aggregated items every item is a
 * `row` item. In a grouped query:
 * - `group-key`: grouped; evaluated per row, one output row per distinct combination of keys;
 * - `aggregate`: evaluated per row, then folded per group (count, ...);
 * - `group`: computed per group from refs to other items (e.g. a ratio of two counts);
 * - `row-filter`: a hidden item that reads fields but is neither grouped nor aggregated; it has no
 *   value per group and exists for its filters (e.g. an rw window on [incident.created]).
 */
type Role = 'row' | 'group-key' | 'aggregate' | 'group' | 'row-filter';

interface PlannedItem {
  readonly index: number;
  readonly item: SandboxQueryItem;
  readonly expression: Expression;
  readonly role: Role;
}

type GroupIndex = number;

export function evaluateQuery(query: SandboxQuery, context: EvaluationContext): EvaluatedTable {
  const planned = query.items.map((item, index) => located(index, item, () => ({ index, item, expression: parseFormula(item.formula), role: 'row' as Role })));
  const aggregated = query.items.some((item) => item.grouped === true || item.aggregate !== undefined);
  const items: PlannedItem[] = aggregated ? planned.map((p) => ({ ...p, role: located(p.index, p.item, () => roleOf(p)) })) : planned;
  const refs = indexRefs(items);
  const compiler = new ItemCompiler(items, refs, context.dataset);
  const tagJoin = items.some((p) => joinsTags(p.expression));
  const rows = baseRows(context.dataset, tagJoin);
  const now = context.dataset.now;

  const visible = items.filter((p) => p.item.hidden !== true);
  const columns = visible.map((p) => {
    const type = compiler.valueType(p.index);
    const format = p.item.format;
    return {
      header: p.item.header,
      dataType: p.item.dataType,
      rawDatetime: type === 'datetime' && format === undefined,
      render: format === undefined ? (v: Value) => v : located(p.index, p.item, () => compileFormat(format, type, context)),
    };
  });
  const shape = {
    headers: columns.map((c) => c.header),
    dataTypes: columns.map((c) => c.dataType),
    rawDatetime: columns.map((c) => c.rawDatetime),
  };
  const renderAll = (values: (index: number) => Value): Value[] => visible.map((p, k) => columns[k]!.render(values(p.index)));
  const ordering = items
    .filter((p) => p.item.order !== undefined)
    .sort((a, b) => (a.item.orderSequence ?? Number.MAX_SAFE_INTEGER) - (b.item.orderSequence ?? Number.MAX_SAFE_INTEGER) || a.index - b.index);

  if (!aggregated) {
    const evaluators = items.map((p) => compiler.row(p.index).evaluate);
    const predicates = items.flatMap((p) =>
      p.item.filters.map((filter) => {
        const test = located(p.index, p.item, () => compileFilter(filter, compiler.valueType(p.index), now));
        const evaluate = evaluators[p.index]!;
        return (row: RowId) => test(evaluate(row));
      }),
    );
    const filtered = rows.filter((row) => predicates.every((test) => test(row)));
    const ordered =
      ordering.length === 0
        ? filtered
        : filtered.reorder(
            sortedPositions(
              filtered.length,
              ordering.map((p) => ({ direction: p.item.order === 'desc' ? -1 : 1, values: filtered.map(evaluators[p.index]!) })),
            ),
          );
    const renderRow = (row: RowId): Value[] => renderAll((i) => evaluators[i]!(row));
    const result = query.options.ignoreRepeatedRows ? ordered.reorder(firstOccurrences(ordered.length, (k) => renderRow(ordered.at(k)))) : ordered;
    return { ...shape, totalRows: result.length, row: (k) => renderRow(result.at(k)) };
  }

  return runGrouped(items, compiler, rows, {
    now,
    ordering,
    renderAll,
    ignoreRepeatedRows: query.options.ignoreRepeatedRows,
    shape,
  });
}

function runGrouped(
  items: PlannedItem[],
  compiler: ItemCompiler,
  rows: RowList,
  run: {
    now: number;
    ordering: PlannedItem[];
    renderAll: (values: (index: number) => Value) => Value[];
    ignoreRepeatedRows: boolean;
    shape: Pick<EvaluatedTable, 'headers' | 'dataTypes' | 'rawDatetime'>;
  },
): EvaluatedTable {
  const rowPredicates: ((row: RowId) => boolean)[] = [];
  const groupPredicates: { index: number; test: Predicate }[] = [];
  const aggregations: { evaluate: (row: RowId) => Value; conditions: Predicate[]; fold: Fold }[] = [];
  const keyItems = items.filter((p) => p.role === 'group-key');

  for (const p of items) {
    located(p.index, p.item, () => {
      const rowLevel = p.role === 'group' ? undefined : compiler.row(p.index);
      const conditions: Predicate[] = [];
      for (const filter of p.item.filters) {
        if (p.role === 'group-key' || p.role === 'row-filter') {
          // Before or after aggregation is the same for a group key, and cheaper per row.
          const test = compileFilter(filter, rowLevel!.type, run.now);
          const evaluate = rowLevel!.evaluate;
          rowPredicates.push((row) => test(evaluate(row)));
        } else if (p.role === 'aggregate' && filter.beforeAggregate === true) {
          // A before-aggregate filter on an aggregated item restricts the rows that item folds, like
          // SQL's COUNT(*) FILTER (WHERE ...): it is how a tile counts "resolved" next to "all".
          conditions.push(compileFilter(filter, rowLevel!.type, run.now));
        } else {
          groupPredicates.push({ index: p.index, test: compileFilter(filter, compiler.valueType(p.index), run.now) });
        }
      }
      if (p.role === 'aggregate') aggregations.push({ evaluate: rowLevel!.evaluate, conditions, fold: compiler.fold(p.index) });
    });
  }

  const keyEvaluators = keyItems.map((p) => compiler.row(p.index).evaluate);
  const keyColumns = keyItems.map((p) => compiler.keyColumn(p.index));
  const groups = new Map<string, GroupIndex>();
  let groupCount = 0;
  const openGroup = (values: Value[]): GroupIndex => {
    values.forEach((v, k) => keyColumns[k]!.push(v));
    for (const a of aggregations) a.fold.open();
    return groupCount++;
  };
  // Without grouped items the whole result is one group, even when no row passes (count 0), as in SQL.
  if (keyItems.length === 0) groups.set('', openGroup([]));

  rows.forEach((row) => {
    for (const test of rowPredicates) if (!test(row)) return;
    const values = keyEvaluators.map((evaluate) => evaluate(row));
    const key = values.map(groupKeyPart).join('\u0000');
    let group = groups.get(key);
    if (group === undefined) {
      group = openGroup(values);
      groups.set(key, group);
    }
    for (const a of aggregations) {
      const v = a.evaluate(row);
      if (a.conditions.every((test) => test(v))) a.fold.add(group, v);
    }
  });

  const groupValues: Value[][] = [];
  for (let g = 0; g < groupCount; g++) {
    groupValues.push(items.map((p) => (p.role === 'row-filter' ? null : compiler.group(p.index).evaluate(g))));
  }
  let kept = groupValues.filter((values) => groupPredicates.every(({ index, test }) => test(values[index]!)));
  if (run.ordering.length > 0) {
    const keys = run.ordering.map((p) => ({ direction: p.item.order === 'desc' ? -1 : 1, values: kept.map((values) => values[p.index]!) }));
    const positions = sortedPositions(kept.length, keys);
    kept = Array.from(positions, (position) => kept[position]!);
  }
  let rendered = kept.map((values) => run.renderAll((i) => values[i]!));
  if (run.ignoreRepeatedRows) {
    const positions = firstOccurrences(rendered.length, (k) => rendered[k]!);
    rendered = Array.from(positions, (position) => rendered[position]!);
  }
  return { ...run.shape, totalRows: rendered.length, row: (k) => rendered[k]! };
}

function roleOf(p: PlannedItem): Role {
  const { item } = p;
  if (item.grouped === true && item.aggregate !== undefined) throw new QueryError('an item cannot be both grouped and aggregated');
  if (item.grouped === true) return 'group-key';
  if (item.aggregate !== undefined) return 'aggregate';
  if (!readsFields(p.expression)) return 'group';
  if (item.hidden === true) return 'row-filter';
  throw new QueryError(
    'in a grouped query a visible item must be grouped, aggregated, or computed from [ref:...] of other items; ' +
      'a hidden item that reads fields only filters rows',
  );
}

function indexRefs(items: readonly PlannedItem[]): Map<string, number> {
  const refs = new Map<string, number>();
  for (const p of items) {
    const ref = p.item.ref;
    if (ref === undefined) continue;
    if (refs.has(ref)) {
      throw new QueryError(`items[${p.index}] ("${p.item.header}"): ref '${ref}' is already used by items[${refs.get(ref)}]`, { located: true });
    }
    refs.set(ref, p.index);
  }
  return refs;
}

/**
 * Compiles each item once per level (per row, per group), following refs and refusing cycles.
 * Group-level values of keys and aggregates are read from columns filled while the rows are folded.
 */
class ItemCompiler {
  private readonly rowLevel = new Map<number, Compiled<RowId>>();
  private readonly groupLevel = new Map<number, Compiled<GroupIndex>>();
  private readonly stack: number[] = [];
  private readonly keyColumns = new Map<number, Value[]>();
  private readonly folds = new Map<number, Fold>();
  private readonly readers = new Map<string, (row: RowId) => Value>();

  constructor(
    private readonly items: readonly PlannedItem[],
    private readonly refs: ReadonlyMap<string, number>,
    private readonly dataset: Dataset,
  ) {}

  /** The item's value per base row (for a `row`, `group-key` or `row-filter` item; the input of an `aggregate`). */
  row(index: number): Compiled<RowId> {
    const cached = this.rowLevel.get(index);
    if (cached) return cached;
    const p = this.items[index]!;
    const compiled = this.guard(index, () =>
      withFunction(
        p.item.function,
        compileExpression<RowId>(p.expression, {
          field: (entity, field) => this.field(entity, field),
          ref: (name) => {
            const target = this.resolve(name);
            const role = this.items[target]!.role;
            if (role === 'aggregate' || role === 'group') {
              throw new QueryError(`[ref:${name}] is computed per group and cannot be used in a per-row formula`);
            }
            return this.row(target);
          },
        }),
      ),
    );
    this.rowLevel.set(index, compiled);
    return compiled;
  }

  /** The item's value per group (grouped queries only). */
  group(index: number): Compiled<GroupIndex> {
    const cached = this.groupLevel.get(index);
    if (cached) return cached;
    const p = this.items[index]!;
    const compiled = this.guard(index, (): Compiled<GroupIndex> => {
      switch (p.role) {
        case 'group-key': {
          const column = this.keyColumn(index);
          return { type: this.row(index).type, evaluate: (g) => column[g]! };
        }
        case 'aggregate': {
          const fold = this.fold(index);
          return { type: fold.type, evaluate: (g) => fold.result(g) };
        }
        case 'group':
          return withFunction(
            p.item.function,
            compileExpression<GroupIndex>(p.expression, {
              field: () => {
                throw new QueryError('reads a field but is neither grouped nor aggregated');
              },
              ref: (name) => {
                const target = this.resolve(name);
                if (this.items[target]!.role === 'row-filter') {
                  throw new QueryError(`[ref:${name}] has no value per group: it is neither grouped nor aggregated`);
                }
                return this.group(target);
              },
            }),
          );
        default:
          throw new QueryError('has no value per group');
      }
    });
    this.groupLevel.set(index, compiled);
    return compiled;
  }

  /** The type of the item's final (pre-format) value. */
  valueType(index: number): ValueType {
    const p = this.items[index]!;
    if (p.role === 'aggregate') return this.fold(index).type;
    if (p.role === 'group') return this.group(index).type;
    return this.row(index).type;
  }

  /** A group key's value per group, filled while rows are folded. */
  keyColumn(index: number): Value[] {
    let column = this.keyColumns.get(index);
    if (!column) {
      column = [];
      this.keyColumns.set(index, column);
    }
    return column;
  }

  /** An aggregate's running state per group. */
  fold(index: number): Fold {
    let fold = this.folds.get(index);
    if (!fold) {
      const p = this.items[index]!;
      fold = located(index, p.item, () => foldFor(p.item.aggregate!, this.row(index).type));
      this.folds.set(index, fold);
    }
    return fold;
  }

  private resolve(name: string): number {
    const target = this.refs.get(name);
    if (target === undefined) {
      const known = [...this.refs.keys()];
      throw new QueryError(`[ref:${name}] names no item; refs in this query: ${known.length > 0 ? known.join(', ') : '(none)'}`);
    }
    return target;
  }

  private field(entity: string, field: string): Compiled<RowId> {
    const name = `${entity}.${field}`;
    const definition = FIELDS[name];
    if (!definition) throw new QueryError(`unknown field [${name}]; known fields: ${Object.keys(FIELDS).join(', ')}`);
    let reader = this.readers.get(name);
    if (!reader) {
      reader = definition.read(this.dataset);
      this.readers.set(name, reader);
    }
    return { type: definition.type, evaluate: reader };
  }

  private guard<T>(index: number, compile: () => T): T {
    if (this.stack.includes(index)) {
      const cycle = [...this.stack.slice(this.stack.indexOf(index)), index].map((i) => `"${this.items[i]!.item.header}"`);
      throw new QueryError(`items refer to each other in a cycle: ${cycle.join(' → ')}`, { located: true });
    }
    this.stack.push(index);
    try {
      return located(index, this.items[index]!.item, compile);
    } finally {
      this.stack.pop();
    }
  }
}

function withFunction<C>(name: string | undefined, compiled: Compiled<C>): Compiled<C> {
  if (name === undefined) return compiled;
  const bucket = dateBucket(name);
  if (compiled.type !== 'datetime') throw new QueryError(`function ${name} needs a datetime value, got ${compiled.type}`);
  const evaluate = compiled.evaluate;
  return {
    type: 'datetime',
    evaluate: (c) => {
      const v = evaluate(c);
      return typeof v === 'number' ? bucket(v) : null;
    },
  };
}

/** One aggregate's running state, one slot per group. */
interface Fold {
  readonly type: ValueType;
  open(): void;
  add(group: GroupIndex, value: Value): void;
  result(group: GroupIndex): Value;
}

/** Aggregates skip nulls, as in SQL: count counts non-null values, and sum/avg/min/max of nothing is null. */
function foldFor(aggregate: string, input: ValueType): Fold {
  switch (aggregate) {
    case 'count': {
      const counts: number[] = [];
      return {
        type: 'number',
        open: () => counts.push(0),
        add: (g, v) => {
          if (v !== null) counts[g]!++;
        },
        result: (g) => counts[g]!,
      };
    }
    case 'sum':
    case 'avg': {
      if (input !== 'number') throw new QueryError(`aggregate ${aggregate} needs numbers, got ${input}`);
      const sums: number[] = [];
      const counts: number[] = [];
      return {
        type: 'number',
        open: () => {
          sums.push(0);
          counts.push(0);
        },
        add: (g, v) => {
          if (typeof v !== 'number') return;
          sums[g]! += v;
          counts[g]!++;
        },
        result: (g) => (counts[g] === 0 ? null : aggregate === 'sum' ? sums[g]! : sums[g]! / counts[g]!),
      };
    }
    case 'min':
    case 'max': {
      const best: Value[] = [];
      const sign = aggregate === 'min' ? -1 : 1;
      return {
        type: input,
        open: () => best.push(null),
        add: (g, v) => {
          if (v === null) return;
          const current = best[g]!;
          if (current === null || compareValues(v, current) * sign > 0) best[g] = v;
        },
        result: (g) => best[g]!,
      };
    }
    default:
      throw new QueryError(`unsupported aggregate '${aggregate}'; the sandbox knows ${AGGREGATES.join(', ')}`);
  }
}

function groupKeyPart(value: Value): string {
  return value === null ? '\u0001' : typeof value === 'number' ? `n${value}` : `s${value}`;
}

function joinsTags(expression: Expression): boolean {
  switch (expression.kind) {
    case 'field':
      return FIELDS[`${expression.entity}.${expression.field}`]?.joinsTags === true;
    case 'call':
      return expression.args.some(joinsTags);
    case 'negate':
      return joinsTags(expression.operand);
    case 'binary':
      return joinsTags(expression.left) || joinsTags(expression.right);
    default:
      return false;
  }
}

/** Orders values of one type: numbers and datetimes numerically, text by UTF-16 code units (locale-free, so stable everywhere). */
function compareValues(a: Value, b: Value): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/**
 * Positions 0..n-1 sorted by the keys, in sequence. Nulls sort last in both directions (a tile's
 * blank cells stay at the bottom); ties keep the earlier position, so the order is total and
 * identical on every run.
 */
function sortedPositions(n: number, keys: { direction: number; values: ArrayLike<Value> }[]): Uint32Array {
  const positions = new Uint32Array(n);
  for (let i = 0; i < n; i++) positions[i] = i;
  positions.sort((p, q) => {
    for (const key of keys) {
      const a = key.values[p]!;
      const b = key.values[q]!;
      if (a === b) continue;
      if (a === null) return 1;
      if (b === null) return -1;
      const c = compareValues(a, b);
      if (c !== 0) return c * key.direction;
    }
    return p - q;
  });
  return positions;
}

/** Positions of rows whose rendered values differ from every earlier row (`ignoreRepeatedRows`). */
function firstOccurrences(n: number, rowAt: (position: number) => Value[]): Uint32Array {
  const seen = new Set<string>();
  const kept: number[] = [];
  for (let k = 0; k < n; k++) {
    const key = JSON.stringify(rowAt(k));
    if (seen.has(key)) continue;
    seen.add(key);
    kept.push(k);
  }
  return Uint32Array.from(kept);
}

/**
 * A list of base row ids. With a tag join an incident yields one row per tag label, or a single row
 * with a null label when it has none (a left join: untagged incidents are not silently dropped).
 */
class RowList {
  constructor(private readonly ids: Uint32Array) {}

  get length(): number {
    return this.ids.length;
  }

  at(position: number): RowId {
    return this.ids[position]!;
  }

  forEach(visit: (row: RowId) => void): void {
    for (let i = 0; i < this.ids.length; i++) visit(this.ids[i]!);
  }

  filter(keep: (row: RowId) => boolean): RowList {
    const out = new Uint32Array(this.ids.length);
    let n = 0;
    for (let i = 0; i < this.ids.length; i++) {
      const row = this.ids[i]!;
      if (keep(row)) out[n++] = row;
    }
    return new RowList(n === out.length ? out : out.slice(0, n));
  }

  map<T>(project: (row: RowId) => T): T[] {
    const out = new Array<T>(this.ids.length);
    for (let i = 0; i < this.ids.length; i++) out[i] = project(this.ids[i]!);
    return out;
  }

  /** The rows at these positions, in this order (a permutation, or a subset for deduplication). */
  reorder(positions: Uint32Array): RowList {
    const out = new Uint32Array(positions.length);
    for (let i = 0; i < positions.length; i++) out[i] = this.ids[positions[i]!]!;
    return new RowList(out);
  }
}

function baseRows(dataset: Dataset, tagJoin: boolean): RowList {
  if (!tagJoin) {
    const ids = new Uint32Array(dataset.size);
    for (let i = 0; i < dataset.size; i++) ids[i] = i * 4;
    return new RowList(ids);
  }
  let total = 0;
  for (let i = 0; i < dataset.size; i++) total += Math.max(1, countBits(dataset.tags[i]!));
  const ids = new Uint32Array(total);
  let n = 0;
  for (let i = 0; i < dataset.size; i++) {
    const slots = Math.max(1, countBits(dataset.tags[i]!));
    for (let slot = 0; slot < slots; slot++) ids[n++] = i * 4 + slot;
  }
  return new RowList(ids);
}

/** Runs `work`, prefixing a QueryError with the item it is about: `items[2] ("Resolved"): ...`. */
function located<T>(index: number, item: SandboxQueryItem, work: () => T): T {
  try {
    return work();
  } catch (error) {
    if (error instanceof QueryError && !error.located) {
      throw new QueryError(`items[${index}] ("${item.header}"): ${error.message}`, { located: true });
    }
    throw error;
  }
}
