import type { Column, TypedValue } from '../../transform/column.js';
import { isCalendarDate } from '../../value-types/civil-date.js';
import { INT64_MAX, INT64_MIN, MAX_EPOCH_MS, MIN_EPOCH_MS, NUMERIC_INTEGER_DIGITS, NUMERIC_SCALE } from '../../transform/warehouse-limits.js';
import { BigQueryValueError } from './bigquery-errors.js';

/**
 * How one typed cell is written into a newline-delimited JSON load file, as JSON text.
 *
 * - FLOAT64   → JSON number (-0 is written as 0: JSON.stringify has no negative zero, and the
 *               transform already folds it)
 * - INT64     → JSON string: JSON numbers go through doubles in most readers, so anything beyond
 *               2^53 would be rounded; BigQuery parses a quoted integer for an INT64 column.
 * - NUMERIC   → JSON string, checked against BigQuery's NUMERIC range (29 integer digits, 9 scale)
 *               so an out-of-range value names its column here instead of failing the whole load.
 * - STRING    → JSON string
 * - TIMESTAMP → RFC 3339 UTC string with milliseconds
 * - DATE      → "YYYY-MM-DD"
 * - null      → null, whatever the type
 */
export function encodeValue(value: TypedValue, column: Pick<Column, 'name' | 'type'>): string {
  if (value === null) return 'null';
  switch (column.type) {
    case 'FLOAT64':
      return JSON.stringify(float64(value, column.name));
    case 'INT64':
      return JSON.stringify(int64(value, column.name));
    case 'NUMERIC':
      return JSON.stringify(numeric(value, column.name));
    case 'STRING':
      return JSON.stringify(expect(value, 'string', column.name));
    case 'TIMESTAMP':
      return JSON.stringify(toRfc3339(expect(value, 'number', column.name), column.name));
    case 'DATE':
      return JSON.stringify(date(value, column.name));
  }
}

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;

/** Epoch milliseconds as BigQuery's canonical text form, e.g. 2024-03-01T12:00:00.000Z. */
export function toRfc3339(epochMs: number, columnName: string): string {
  if (!Number.isFinite(epochMs) || epochMs < MIN_EPOCH_MS || epochMs > MAX_EPOCH_MS) {
    throw new BigQueryValueError(columnName, String(epochMs), 'is outside the TIMESTAMP range 0001-01-01..9999-12-31 (epoch milliseconds)');
  }
  return new Date(epochMs).toISOString();
}

function float64(value: TypedValue, columnName: string): number {
  const number = expect(value, 'number', columnName);
  // JSON has no NaN or Infinity; JSON.stringify would silently write null.
  if (!Number.isFinite(number)) {
    throw new BigQueryValueError(columnName, String(number), 'is not a finite FLOAT64 and cannot be written as JSON');
  }
  return number;
}

function int64(value: TypedValue, columnName: string): string {
  const integer = expect(value, 'bigint', columnName);
  if (integer < INT64_MIN || integer > INT64_MAX) {
    throw new BigQueryValueError(columnName, integer.toString(), 'is outside the INT64 range');
  }
  return integer.toString();
}

function numeric(value: TypedValue, columnName: string): string {
  const text = expect(value, 'string', columnName);
  const match = DECIMAL.exec(text);
  if (match === null) {
    throw new BigQueryValueError(columnName, JSON.stringify(text), 'is not a plain decimal (expected e.g. -12.5)');
  }
  // Leading zeros of the integer part and trailing zeros of the fraction carry no precision.
  const integerDigits = (match[2] ?? '').replace(/^0+(?=\d)/, '').replace(/^0$/, '').length;
  const scale = (match[3] ?? '').replace(/0+$/, '').length;
  if (integerDigits > NUMERIC_INTEGER_DIGITS || scale > NUMERIC_SCALE) {
    throw new BigQueryValueError(
      columnName,
      text,
      `does not fit NUMERIC (at most ${NUMERIC_INTEGER_DIGITS} integer and ${NUMERIC_SCALE} fractional digits; has ${integerDigits} and ${scale})`,
    );
  }
  return text;
}

function date(value: TypedValue, columnName: string): string {
  const text = expect(value, 'string', columnName);
  if (!isCalendarDate(text)) {
    throw new BigQueryValueError(columnName, JSON.stringify(text), 'is not a calendar date YYYY-MM-DD in 0001..9999');
  }
  return text;
}

type JsType = 'number' | 'bigint' | 'string';
type JsValue<T extends JsType> = T extends 'number' ? number : T extends 'bigint' ? bigint : string;

// Types are trusted inside tilehouse, but a wrong representation here would load silently wrong
// data (a number for INT64 loses digits), so the writer refuses it loudly.
function expect<T extends JsType>(value: TypedValue, type: T, columnName: string): JsValue<T> {
  if (typeof value !== type) {
    throw new BigQueryValueError(columnName, String(value), `is a JavaScript ${typeof value}, expected ${type} for this column type`);
  }
  return value as JsValue<T>;
}
