import type { Column, TypedRow, TypedValue } from '../../transform/column.js';
import { isCalendarDate } from '../../value-types/civil-date.js';
import { INT64_MAX, INT64_MIN, MAX_EPOCH_MS, MIN_EPOCH_MS, NUMERIC_INTEGER_DIGITS, NUMERIC_SCALE } from '../../transform/warehouse-limits.js';
import { countNoun } from '../../count-noun.js';
import { PostgresValueError } from './postgres-errors.js';

/**
 * One row as a line of COPY's text format (tab-separated, `\N` for NULL, backslash escapes):
 * cheaper for the server to parse than CSV, and exact both ways: an empty string is an empty
 * field, never NULL; numbers go as their text, never through a double they do not fit.
 */
export function copyRowEncoder(columns: readonly Pick<Column, 'name' | 'type'>[]): (row: TypedRow) => string {
  return (row) => {
    if (row.length !== columns.length) throw new PostgresValueError('(row)', countNoun(row.length, 'value'), `for ${countNoun(columns.length, 'column')}`);
    let line = '';
    for (let index = 0; index < columns.length; index++) {
      if (index > 0) line += '\t';
      line += copyValue(row[index] ?? null, columns[index]!);
    }
    return `${line}\n`;
  };
}

const NEEDS_ESCAPE = /[\\\t\n\r]/;

/** Text as COPY's text format needs it: backslash, tab, newline and carriage return escaped. */
function copyText(text: string, column: string): string {
  // PostgreSQL's text cannot hold NUL; the API's JSON can. Refused by name rather than cut there.
  if (text.includes('\u0000'))
    throw new PostgresValueError(column, JSON.stringify(text.slice(0, 40)), 'holds a NUL character, which PostgreSQL text cannot store');
  if (!NEEDS_ESCAPE.test(text)) return text;
  return text.replaceAll('\\', '\\\\').replaceAll('\t', '\\t').replaceAll('\n', '\\n').replaceAll('\r', '\\r');
}

const DECIMAL = /^-?\d+(?:\.\d+)?$/;

export function copyValue(value: TypedValue, column: Pick<Column, 'name' | 'type'>): string {
  if (value === null) return '\\N';
  switch (column.type) {
    case 'STRING':
      return copyText(expect(value, 'string', column.name), column.name);
    case 'INT64': {
      const integer = expect(value, 'bigint', column.name);
      if (integer < INT64_MIN || integer > INT64_MAX) throw new PostgresValueError(column.name, integer.toString(), 'is outside the bigint range');
      return integer.toString();
    }
    case 'NUMERIC': {
      const text = expect(value, 'string', column.name);
      if (!DECIMAL.test(text)) throw new PostgresValueError(column.name, JSON.stringify(text), 'is not a plain decimal (expected e.g. -12.5)');
      const [whole = '', fraction = ''] = text.replace(/^-/, '').split('.');
      const integerDigits = whole.replace(/^0+/, '').length;
      const scale = fraction.replace(/0+$/, '').length;
      if (integerDigits > NUMERIC_INTEGER_DIGITS || scale > NUMERIC_SCALE)
        throw new PostgresValueError(
          column.name,
          text,
          `does not fit numeric(38,9) (at most ${NUMERIC_INTEGER_DIGITS} integer and ${NUMERIC_SCALE} fractional digits)`,
        );
      return text;
    }
    case 'FLOAT64': {
      const number = expect(value, 'number', column.name);
      // String() is the shortest text that reads back as the same double; PostgreSQL reads it exactly.
      if (Object.is(number, -0)) return '-0';
      if (Number.isNaN(number)) return 'NaN';
      if (!Number.isFinite(number)) return number > 0 ? 'Infinity' : '-Infinity';
      return String(number);
    }
    case 'TIMESTAMP': {
      const epochMs = expect(value, 'number', column.name);
      if (!Number.isFinite(epochMs) || epochMs < MIN_EPOCH_MS || epochMs > MAX_EPOCH_MS)
        throw new PostgresValueError(column.name, String(epochMs), 'is outside the TIMESTAMP range 0001-01-01..9999-12-31 (epoch milliseconds)');
      return new Date(epochMs).toISOString();
    }
    case 'DATE': {
      const text = expect(value, 'string', column.name);
      if (!isCalendarDate(text)) throw new PostgresValueError(column.name, JSON.stringify(text), 'is not a calendar date YYYY-MM-DD in 0001..9999');
      return text;
    }
  }
}

type JsType = 'number' | 'bigint' | 'string';
type JsValue<T extends JsType> = T extends 'number' ? number : T extends 'bigint' ? bigint : string;

// A wrong representation here would load silently wrong data (a number for INT64 loses digits).
function expect<T extends JsType>(value: TypedValue, type: T, columnName: string): JsValue<T> {
  if (typeof value !== type) throw new PostgresValueError(columnName, String(value), `is a JavaScript ${typeof value}, expected ${type} for this column type`);
  return value as JsValue<T>;
}
