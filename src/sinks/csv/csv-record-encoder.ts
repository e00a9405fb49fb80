import { stringify } from 'csv-stringify/sync';
import type { Column, TypedRow } from '../../transform/column.js';
import { isoTimestampFormatter } from '../timestamp-text.js';
import { CSV_DIALECT } from './csv-dialect.js';

/**
 * Typed rows → CSV records in the dialect of csv-dialect.ts, with csv-stringify encoding every
 * string the file holds, and each repeated string only once.
 *
 * Why not hand whole rows to csv-stringify: it costs ~0.4 µs per field (a cast call, a context
 * object and three small arrays per field, a regular expression), ~4.4 µs for the bench's
 * 11-column row, more than reading and typing the row. Most of that is spent on values that repeat
 * (a status, a type, a day) or that cannot need quoting (numbers), so:
 * - **strings** (STRING, NUMERIC and DATE columns) are encoded by csv-stringify with the file's
 *   dialect, in one call per batch of rows. A column whose values repeat keeps the encoded text
 *   of each distinct string (`RepeatingTexts`) and sends csv-stringify only strings it has not
 *   seen; a column of mostly distinct values (ids, free text) sends every value, which is cheaper
 *   than looking each one up first.
 * - **numbers** (FLOAT64, INT64 and TIMESTAMP, typed as numbers and bigints) are written as their
 *   text: JavaScript's number text for FLOAT64 and INT64 (what csv-stringify's default cast
 *   writes: 1e+21 stays in exponent form, which every CSV reader parses; INT64 exact) and ISO 8601
 *   UTC with milliseconds for TIMESTAMP (what BigQuery and spreadsheets read back). That text is made of digits and
 *   `-+.e:TZ` only, which this dialect never quotes; a test holds csv-stringify to that.
 * - null is the empty unquoted field, as csv-stringify writes it.
 * Fields are joined with the dialect's delimiter and records ended by its record delimiter. The
 * bytes are csv-stringify's for the same rows: test/sinks/csv compares them, property by
 * property, with whole rows stringified.
 */
export class CsvRecordEncoder {
  private readonly writeNumber: readonly (NumberWriter | undefined)[];
  private readonly texts: readonly (TextColumn | undefined)[];

  constructor(columns: readonly Column[]) {
    this.writeNumber = columns.map((column) => numberWriter(column));
    this.texts = columns.map((column, index) => (isTextType(column) ? new TextColumn(index) : undefined));
  }

  /** The records of `rows`, each ended by the record delimiter. */
  encode(rows: readonly TypedRow[]): string {
    const texts = this.texts;
    const writeNumber = this.writeNumber;
    const width = texts.length;
    for (const column of texts) column?.encodeBatch(rows);
    let out = '';
    for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
      const row = rows[rowIndex]!;
      for (let columnIndex = 0; columnIndex < width; columnIndex++) {
        if (columnIndex > 0) out += DELIMITER;
        const value = row[columnIndex];
        if (value === null || value === undefined) continue;
        const text = texts[columnIndex];
        out += text === undefined ? writeNumber[columnIndex]!(value as number | bigint) : text.field(rowIndex, value as string);
      }
      out += RECORD_DELIMITER;
    }
    return out;
  }
}

const DELIMITER = CSV_DIALECT.delimiter;
const RECORD_DELIMITER = CSV_DIALECT.record_delimiter;

type NumberWriter = (value: number | bigint) => string;

/** Columns whose typed values are strings (see TypedValue): the ones csv-stringify encodes. */
function isTextType(column: Column): boolean {
  return column.type === 'STRING' || column.type === 'NUMERIC' || column.type === 'DATE';
}

function numberWriter(column: Column): NumberWriter | undefined {
  if (isTextType(column)) return undefined;
  if (column.type === 'TIMESTAMP') {
    // One formatter per column: it remembers the date text of the last day it wrote.
    const format = isoTimestampFormatter();
    return (value) => format(value as number);
  }
  return String;
}

/**
 * One string column's encoded fields for the current batch. It starts out remembering encoded
 * strings; a batch in which most lookups miss switches it to encoding every value for the next
 * DIRECT_BATCHES batches (then it tries remembering again: a column's values can change character).
 */
class TextColumn {
  private readonly known = new Map<string, string>();
  private knownChars = 0;
  /** Batches left to encode directly; 0: look strings up in `known` first. */
  private directBatches = 0;
  /** The current batch's encoded fields by row index, when it was encoded directly. */
  private byRow: string[] | undefined;

  constructor(private readonly index: number) {}

  encodeBatch(rows: readonly TypedRow[]): void {
    this.byRow = undefined;
    if (this.directBatches > 0) {
      this.directBatches--;
      this.byRow = this.encodeEveryValue(rows);
    } else {
      this.encodeNewValues(rows);
    }
  }

  /** The encoded field of the string in row `rowIndex` of the batch (`value`). */
  field(rowIndex: number, value: string): string {
    return this.byRow === undefined ? this.known.get(value)! : this.byRow[rowIndex]!;
  }

  private encodeEveryValue(rows: readonly TypedRow[]): string[] {
    if (this.known.size > 0) this.forget();
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

  private forget(): void {
    this.known.clear();
    this.knownChars = 0;
  }

  private encodeNewValues(rows: readonly TypedRow[]): void {
    const known = this.known;
    if (known.size > MAX_KNOWN_TEXTS || this.knownChars > MAX_KNOWN_CHARS) this.forget();
    const fresh: string[] = [];
    let lookups = 0;
    for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
      const value = rows[rowIndex]![this.index];
      if (typeof value !== 'string') continue;
      lookups++;
      if (known.has(value)) continue;
      // Placeholder until the batch is encoded: a string repeated within the batch is sent once.
      known.set(value, '');
      this.knownChars += value.length;
      fresh.push(value);
    }
    if (fresh.length === 0) return;
    const encoded = encodeEach(fresh);
    for (let index = 0; index < fresh.length; index++) known.set(fresh[index]!, encoded[index]!);
    // Mostly new strings: remembering them costs more than it saves (and the memory of a batch).
    // From the next batch on; this one's fields are in `known` until then.
    if (lookups >= MIN_LOOKUPS_TO_JUDGE && fresh.length * 2 > lookups) this.directBatches = DIRECT_BATCHES;
  }
}

const MAX_KNOWN_TEXTS = 10_000;
const MAX_KNOWN_CHARS = 1_000_000;
const MIN_LOOKUPS_TO_JUDGE = 100;
const DIRECT_BATCHES = 32;

/**
 * Each string's encoded field, from one csv-stringify call over one-field records. The records are
 * separated by NUL rather than the dialect's CR LF, which a quoted field may contain; split on NUL,
 * the output gives each field back. A string holding a NUL (csv-stringify would quote it for that
 * separator, which the file's dialect does not) is encoded on its own, with the file's dialect.
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
  const records = new Array<string[]>(values.length);
  for (let index = 0; index < values.length; index++) records[index] = [values[index]!];
  const fields = stringify(records, ONE_FIELD_PER_RECORD).split(NUL);
  fields.pop(); // after the last record's NUL
  return fields;
}

const NUL = '\u0000';
const ONE_FIELD_PER_RECORD = { ...CSV_DIALECT, record_delimiter: NUL };
