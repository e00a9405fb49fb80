import type { EvaluatedTable } from './query-evaluator.js';
import type { Value } from './values.js';

/**
 * How datetimes travel. The spec defines a Timestamp object `{"$date": ms}` for incident fields but
 * does not say what export rows carry, so the sandbox can send any of the plausible encodings.
 */
export type DatetimeFormat = 'epoch-ms' | 'timestamp-object' | 'iso';
/** The spec does not say whether a row is an array (aligned with headers) or an object keyed by header. */
export type RowShape = 'array' | 'object';

export interface WireFormat {
  datetimeFormat: DatetimeFormat;
  rowShape: RowShape;
}

export type WireCell = Value | { $date: number };

/** One row's cells with datetimes encoded; always positional. */
export function encodeRow(table: EvaluatedTable, index: number, datetimeFormat: DatetimeFormat): WireCell[] {
  const values = table.row(index);
  return values.map((value, column) => (table.rawDatetime[column] && typeof value === 'number' ? encodeDatetime(value, datetimeFormat) : value));
}

function encodeDatetime(ms: number, format: DatetimeFormat): WireCell {
  switch (format) {
    case 'epoch-ms':
      return ms;
    case 'timestamp-object':
      return { $date: ms };
    case 'iso':
      return new Date(ms).toISOString();
  }
}

/** Positional cells → an object keyed by header; with duplicate headers the later column wins (object rows are lossy). */
export function toObjectRow(headers: readonly string[], cells: readonly WireCell[]): Record<string, WireCell> {
  const row: Record<string, WireCell> = {};
  headers.forEach((header, column) => {
    row[header] = cells[column]!;
  });
  return row;
}
