import type { Options } from 'csv-stringify';
import { stringify } from 'csv-stringify/sync';
import type { Column, TypedRow } from '../../transform/column.js';
import { isoTimestampFormatter } from '../timestamp-text.js';
import { CSV_DIALECT } from './csv-dialect.js';

/**
 * Typed rows → CSV records in the dialect of csv-dialect.ts, with csv-stringify encoding every
 * string the file holds, and each repeated value's text made only once.
 *
 * Why not hand whole rows to csv-stringify: it costs ~0.4 µs per field (a cast call, a context
 * object and three small arrays per field, a regular expression), ~4.4 µs for the bench's
 * 11-column row, more than reading and typing the row, and most of it is spent on values that
 * repeat (a status, a type, a day) or that cannot need quoting (numbers). So:
 * - **strings** (STRING, NUMERIC and DATE columns) are encoded by csv-stringify with the file's
 *   dialect, in one call per batch of rows;
 * - **numbers** (FLOAT64, INT64 and TIMESTAMP, typed as numbers and bigints) are written as their
 *   text: JavaScript's number text for FLOAT64 and INT64 (what csv-stringify's default cast
 *   writes: 1e+21 stays in exponent form, which every CSV reader parses; INT64 exact) and ISO 8601
 *   UTC with milliseconds for TIMESTAMP (what BigQuery and spreadsheets read back). That text is
 *   made of digits and `-+.e:TZ` only, which this dialect never quotes; a test holds csv-stringify
 *   to that;
 * - null is the empty unquoted field, as csv-stringify writes it.
 * Each column remembers the field text of the values it has seen (`ColumnFields`), so a value that
 * repeats is encoded once per file; a column of mostly distinct values (ids, instants, free text)
 * stops remembering, which is cheaper than looking each value up first.
 * Fields are joined with the dialect's delimiter and records ended by its record delimiter. The
 * bytes are csv-stringify's for the same rows: test/sinks/csv compares them, property by
 * property, with whole rows stringified.
 */
export class CsvRecordEncoder {
  private readonly columns: readonly ColumnFields[];

  constructor(columns: readonly Column[]) {
    this.columns = columns.map((column, index) => new ColumnFields(index, isTextType(column) ? undefined : numberText(column)));
  }

  /** The records of `rows`, each ended by the record delimiter. */
  encode(rows: readonly TypedRow[]): string {
    const columns = this.columns;
    const width = columns.length;
    for (const column of columns) column.startBatch(rows);
    let out = '';
    for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
      const row = rows[rowIndex]!;
      for (let columnIndex = 0; columnIndex < width; columnIndex++) {
        if (columnIndex > 0) out += DELIMITER;
        const value = row[columnIndex];
        if (value !== null && value !== undefined) out += columns[columnIndex]!.field(rowIndex, value);
      }
      out += RECORD_DELIMITER;
    }
    return out;
  }
}

const DELIMITER = CSV_DIALECT.delimiter;
const RECORD_DELIMITER = CSV_DIALECT.record_delimiter;

type Value = number | bigint | string;

/** Columns whose typed values are strings (see TypedValue): the ones csv-stringify encodes. */
function isTextType(column: Column): boolean {
  return column.type === 'STRING' || column.type === 'NUMERIC' || column.type === 'DATE';
}

function numberText(column: Column): (value: number | bigint) => string {
  if (column.type === 'TIMESTAMP') {
    // One formatter per column: it remembers the date text of the last day it wrote.
    const format = isoTimestampFormatter();
    return (value) => format(value as number);
  }
  return String;
}

/**
 * One column's field texts for the current batch. It starts out remembering the text of each
 * value; a batch in which most values were new switches it to making every value's text for the
 * next DIRECT_BATCHES batches (then it tries remembering again: a column's values can change
 * character). String columns get their texts from csv-stringify, all of a batch's new strings in
 * one call, before the batch is written; number columns make theirs as they are asked.
 */
class ColumnFields {
  private readonly known = new Map<Value, string>();
  private knownChars = 0;
  /** Batches left to make every text; 0: look values up in `known` first. */
  private directBatches = 0;
  private direct = false;
  private lookups = 0;
  private misses = 0;
  /** A string column's encoded fields of the batch by row index, when it is direct. */
  private byRow: string[] | undefined;

  constructor(
    private readonly index: number,
    /** A number column's text; undefined for a string column. */
    private readonly numberText: ((value: number | bigint) => string) | undefined,
  ) {}

  startBatch(rows: readonly TypedRow[]): void {
    if (this.lookups >= MIN_LOOKUPS_TO_JUDGE && this.misses * 2 > this.lookups) {
      // Mostly new values: remembering them costs more than it saves (and the memory).
      this.directBatches = DIRECT_BATCHES;
      this.forget();
    }
    this.lookups = 0;
    this.misses = 0;
    this.direct = this.directBatches > 0;
    if (this.direct) this.directBatches--;
    if (this.known.size > MAX_KNOWN_VALUES || this.knownChars > MAX_KNOWN_CHARS) this.forget();
    this.byRow = undefined;
    if (this.numberText !== undefined) return;
    if (this.direct) this.byRow = this.encodeEveryString(rows);
    else this.encodeNewStrings(rows);
  }

  /** The field text of `value`, the value in row `rowIndex` of the batch. */
  field(rowIndex: number, value: Value): string {
    const numberText = this.numberText;
    if (numberText === undefined) return this.byRow === undefined ? this.known.get(value)! : this.byRow[rowIndex]!;
    if (this.direct) return numberText(value as number | bigint);
    this.lookups++;
    let text = this.known.get(value);
    if (text === undefined) {
      this.misses++;
      text = numberText(value as number | bigint);
      this.known.set(value, text);
      this.knownChars += text.length;
    }
    return text;
  }

  private forget(): void {
    this.known.clear();
    this.knownChars = 0;
  }

  private encodeEveryString(rows: readonly TypedRow[]): string[] {
    const values: string[] = [];
    const rowsOf: number[] = [];
    for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
      const value = rows[rowIndex]![this.index];
      if (typeof value !== 'string') continue;
      values.push(value);
      rowsOf.push(rowIndex);
    }
    const encoded = encodeEach(values);
    const byRow = new Array<string>(rows.length);
    for (let index = 0; index < rowsOf.length; index++) byRow[rowsOf[index]!] = encoded[index]!;
    return byRow;
  }

  private encodeNewStrings(rows: readonly TypedRow[]): void {
    const known = this.known;
    const fresh: string[] = [];
    for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
      const value = rows[rowIndex]![this.index];
      if (typeof value !== 'string') continue;
      this.lookups++;
      if (known.has(value)) continue;
      // Placeholder until the batch is encoded: a string repeated within the batch is sent once.
      known.set(value, '');
      this.knownChars += value.length;
      fresh.push(value);
    }
    this.misses = fresh.length;
    if (fresh.length === 0) return;
    const encoded = encodeEach(fresh);
    for (let index = 0; index < fresh.length; index++) known.set(fresh[index]!, encoded[index]!);
  }
}

const MAX_KNOWN_VALUES = 10_000;
const MAX_KNOWN_CHARS = 1_000_000;
const MIN_LOOKUPS_TO_JUDGE = 100;
const DIRECT_BATCHES = 32;

/**
 * Each string's encoded field, from one csv-stringify call that encodes the strings as the fields
 * of a single record. Its options are the file's dialect with one change that keeps every field's
 * text the same but lets the output be split: the field delimiter is NUL instead of the comma, and
 * the comma joins `quoted_match`, so a string holding a comma is still quoted (and nothing else
 * is). Split on NUL, the output gives each field back. A string holding a NUL
 * (csv-stringify would quote it for that delimiter, which the file's dialect does not) is encoded
 * on its own, with the file's dialect.
 */
function encodeEach(values: readonly string[]): string[] {
  let anyNul = false;
  for (let index = 0; index < values.length && !anyNul; index++) anyNul = values[index]!.includes(NUL);
  if (!anyNul) return encodeWithoutNul(values);
  const plain = values.filter((value) => !value.includes(NUL));
  const encodedPlain = encodeWithoutNul(plain);
  let next = 0;
  return values.map((value) => (value.includes(NUL) ? stringify([[value]], CSV_DIALECT).slice(0, -RECORD_DELIMITER.length) : encodedPlain[next++]!));
}

function encodeWithoutNul(values: readonly string[]): string[] {
  if (values.length === 0) return [];
  return stringify([values as string[]], FIELDS_SPLIT_BY_NUL).split(NUL);
}

const NUL = '\u0000';
const FIELDS_SPLIT_BY_NUL: Options = {
  ...CSV_DIALECT,
  delimiter: NUL,
  // What the dialect quotes, and what holds its delimiter (a string pattern: "contains").
  quoted_match: [CSV_DIALECT.quoted_match, CSV_DIALECT.delimiter],
  eof: false,
};
