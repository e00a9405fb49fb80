import type { Options } from 'csv-stringify';
import type { Column, ColumnType, TypedRow, TypedValue } from '../../transform/column.js';
import { isoTimestampFormatter } from '../timestamp-text.js';

/**
 * The CSV we write, and why (stated as csv-stringify options, the reference our hand-written
 * encoder below is tested against):
 * - RFC 4180: comma, double-quote quoting, quotes doubled inside quoted fields, and CRLF between
 *   records. CRLF is what the RFC specifies; every reader we care about (BigQuery, pandas, Excel,
 *   csv-parse) accepts it, while some strict RFC readers reject bare LF.
 * - UTF-8 without a byte-order mark: a BOM becomes part of the first header name in most
 *   parsers and in `bq load`. (Excel needs "Data → From Text" to pick UTF-8; a price worth paying.)
 * - Fields are quoted only when needed (delimiter, quote, CR or LF anywhere inside), plus one convention:
 *   **an unquoted empty field is null, a quoted empty field `""` is the empty string.** That keeps
 *   null and "" distinguishable, which is how BigQuery's CSV loader and csv-parse (via the
 *   `quoting` flag) tell them apart. csv-stringify writes null as an unquoted empty field;
 *   `quoted_match: /^$/` quotes exactly the empty strings (`quoted_empty` would quote nulls too,
 *   `quoted_string` would quote every text field).
 * - No formula escaping: prefixing `=`/`+`/`-`/`@` with `'` would change the data. Files are for
 *   loading, not for double-clicking; consumers opening them in a spreadsheet own that risk.
 */
export const CSV_DIALECT = {
  delimiter: ',',
  quote: '"',
  escape: '"',
  record_delimiter: '\r\n',
  // With an explicit record_delimiter, csv-stringify only quotes fields containing that exact
  // sequence unless told otherwise; a bare LF or CR in a field must be quoted too, or readers
  // that accept either line ending would split the record there.
  quote_record_delimiter: true,
  quoted_match: /^$/,
  bom: false,
  eof: true,
  escape_formulas: false,
} as const satisfies Options;

/** A non-null typed value → its CSV field, quoted if it needs to be. */
type FieldFormatter = (value: Exclude<TypedValue, null>) => string;

// The characters that force quoting under CSV_DIALECT: delimiter, quote, CR, LF.
const NEEDS_QUOTES = /[",\r\n]/;

/**
 * A text as one CSV field under CSV_DIALECT, byte for byte what csv-stringify writes: `""` for the
 * empty string (`quoted_match: /^$/`), quotes doubled inside a field that holds a comma, a quote,
 * CR or LF, anything else as is.
 */
export function csvField(text: string): string {
  if (text === '') return '""';
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

// String(-0) is "0", and String(n) is the shortest text that reads back as n; neither a number nor
// an ISO timestamp can contain a character that needs quoting.
const formatNumber = (): FieldFormatter => (value) => String(value);
const formatText = (): FieldFormatter => (value) => csvField(value as string);
const formatTimestamp = (): FieldFormatter => {
  const format = isoTimestampFormatter();
  return (value) => format(value as number);
};

/**
 * How each type appears in the file: FLOAT64 as JavaScript prints it (1e+21 stays exponent form,
 * which every CSV reader parses), INT64 as exact decimal, NUMERIC/STRING/DATE as their canonical
 * text, TIMESTAMP as ISO 8601 UTC with milliseconds (what BigQuery and spreadsheets read back).
 * Factories, so each column gets its own formatter (the timestamp one keeps per-column state).
 */
const FORMATTERS: Readonly<Record<ColumnType, () => FieldFormatter>> = {
  FLOAT64: formatNumber,
  INT64: formatNumber,
  NUMERIC: formatText,
  STRING: formatText,
  TIMESTAMP: formatTimestamp,
  DATE: formatText,
};

/** The header record: the original headers, quoted where needed, CRLF-terminated. */
export function csvHeaderLine(headers: readonly string[]): string {
  return `${headers.map(csvField).join(',')}\r\n`;
}

/**
 * Typed rows → CSV records (CRLF-terminated lines) for the given columns. This is the hot path of
 * a CSV export, so it is written by hand rather than through csv-stringify (which cost ~4 µs per
 * row in option handling and per-field arrays); the output is the same, byte for byte, as
 * csv-stringify with CSV_DIALECT, and a property test holds it to that. Null is an empty field.
 */
export function csvLineFormatter(columns: readonly Column[]): (row: TypedRow) => string {
  const formatters = columns.map((column) => FORMATTERS[column.type]());
  const width = formatters.length;
  return (row) => {
    let line = '';
    for (let index = 0; index < width; index++) {
      if (index > 0) line += ',';
      const value = row[index];
      if (value !== null && value !== undefined) line += formatters[index]!(value);
    }
    return `${line}\r\n`;
  };
}
