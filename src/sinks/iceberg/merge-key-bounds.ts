import type { TypedValue } from '../../transform/column.js';
import { dayNumberOfCalendarDate } from '../../value-types/civil-date.js';
import type { ColumnType } from '../../value-types/column-types.js';
import { decimalOfBytes, timestampMicros, unscaledDecimal } from './column-metrics.js';
import type { LiveDataFile } from './manifest-reading.js';

/**
 * Which of the parent's data files a merge need not open: a file whose manifest entry bounds some
 * key column (`lower_bounds` / `upper_bounds`, column-metrics.ts) so that none of the run's values
 * of that column lies inside cannot hold any of the run's keys, so it is kept unread. A file
 * without bounds for a column (another writer's, one written before tilehouse wrote bounds) is not
 * judged by that column; a file with none is read, as every file was before.
 * Values are compared as the bounds are written: longs, timestamps (microseconds) and decimals
 * (unscaled at the table's scale 9) as integers, dates as days, strings by their UTF-8 bytes (a
 * truncated bound is still a bound: the lower a prefix, the upper raised).
 */
type Comparable = bigint | number | Buffer;

function comparableOf(type: ColumnType, value: TypedValue): Comparable | undefined {
  switch (type) {
    case 'INT64':
      return BigInt(value as bigint);
    case 'TIMESTAMP':
      return timestampMicros(value as number);
    case 'NUMERIC':
      return unscaledDecimal(value as string);
    case 'DATE':
      return dayNumberOfCalendarDate(value as string);
    case 'STRING':
      return Buffer.from(value as string, 'utf8');
    case 'FLOAT64':
      return undefined;
  }
}

function boundValue(type: ColumnType, bytes: Uint8Array | undefined): Comparable | undefined {
  if (bytes === undefined) return undefined;
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (type) {
    case 'INT64':
    case 'TIMESTAMP':
      return view.length === 8 ? view.readBigInt64LE() : undefined;
    case 'DATE':
      return view.length === 4 ? view.readInt32LE() : undefined;
    case 'NUMERIC':
      return view.length > 0 ? decimalOfBytes(view) : undefined;
    case 'STRING':
      return view;
    case 'FLOAT64':
      return undefined;
  }
}

function compare(a: Comparable, b: Comparable): number {
  if (Buffer.isBuffer(a)) return Buffer.compare(a, b as Buffer);
  const other = b as bigint | number;
  return a < other ? -1 : a > other ? 1 : 0;
}

/** The run's distinct keys, column by column, sorted: what a file's bounds are held against. */
export class RunKeyValues {
  private readonly columns: Comparable[][];
  private sorted = false;

  constructor(private readonly types: readonly ColumnType[]) {
    this.columns = types.map(() => []);
  }

  /** One distinct key of the run (its values in key column order, none null). */
  add(values: readonly TypedValue[]): void {
    this.sorted = false;
    values.forEach((value, index) => {
      const comparable = comparableOf(this.types[index]!, value);
      if (comparable !== undefined) this.columns[index]!.push(comparable);
    });
  }

  /** Whether some value of key column `index` lies in [lower, upper] (either side absent: unbounded). */
  private anyBetween(index: number, lower: Comparable | undefined, upper: Comparable | undefined): boolean {
    if (!this.sorted) {
      for (const column of this.columns) column.sort(compare);
      this.sorted = true;
    }
    const values = this.columns[index]!;
    if (values.length === 0) return true;
    // The first value >= lower, by binary search; it must also be <= upper.
    let low = 0;
    let high = values.length;
    if (lower !== undefined)
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (compare(values[middle]!, lower) < 0) low = middle + 1;
        else high = middle;
      }
    if (low === values.length) return false;
    return upper === undefined || compare(values[low]!, upper) <= 0;
  }

  /** Whether `file` may hold one of the run's keys: false only when its bounds of some key column exclude all of the run's values there. */
  mayBeIn(file: LiveDataFile, fieldIds: readonly number[]): boolean {
    return this.types.every((type, index) => {
      if (type === 'FLOAT64') return true;
      const fieldId = fieldIds[index]!;
      const lower = boundValue(type, file.lowerBounds.get(fieldId));
      const upper = boundValue(type, file.upperBounds.get(fieldId));
      if (lower === undefined && upper === undefined) return true;
      return this.anyBetween(index, lower, upper);
    });
  }
}
