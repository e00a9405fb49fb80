import { ExactNumber } from '../value-types/exact-number.js';
import type { Column, TypedRow, TypedValue } from './column.js';
import { previewValue, ValueInvalidError } from './transform-errors.js';
import { parserFor } from './values/value-parser.js';
import { ValueFailure } from './values/value-failure.js';

export interface TypedRowsOptions {
  /** IANA zone for datetimes without an offset and for DATE of an instant. */
  timezone: string;
  /** fail: the first invalid value throws; null: it becomes null and is counted. */
  onInvalidValue: 'fail' | 'null';
  jobName: string;
  pageNumber: number;
  /** Absolute index of `rows[0]` in the whole export, for error messages. */
  firstRowIndex: number;
}

export interface TypedRows {
  rows: TypedRow[];
  /** Values that did not parse and were loaded as null (only with onInvalidValue: null). */
  nulledValues: number;
}

/**
 * One page of positional raw rows → typed rows. This is the hot path of a million-row tile: the
 * parser of each column is chosen once per page, null short-circuits before any parser runs, and
 * failures are preallocated objects rather than exceptions until we know we will throw.
 */
export function toTypedRows(rows: readonly (readonly unknown[])[], columns: readonly Column[], options: TypedRowsOptions): TypedRows {
  const width = columns.length;
  const parsers = columns.map((column) => parserFor(column.type, options.timezone));
  const nullInvalid = options.onInvalidValue === 'null';
  const typedRows: TypedRow[] = new Array<TypedRow>(rows.length);
  let nulledValues = 0;

  for (let rowIndex = 0; rowIndex < rows.length; rowIndex++) {
    // Trusted: the source's edge (parseExportPage) made every row an array of one value per header.
    const raw = rows[rowIndex]!;
    const typed = new Array<TypedValue>(width);
    for (let columnIndex = 0; columnIndex < width; columnIndex++) {
      const value: unknown = raw[columnIndex];
      if (value === null || value === undefined) {
        typed[columnIndex] = null;
        continue;
      }
      const result = parsers[columnIndex]!(value);
      if (result instanceof ValueFailure) {
        if (!nullInvalid) {
          const column = columns[columnIndex]!;
          throw new ValueInvalidError(locate(options, rowIndex), column.header, column.type, preview(value), result.reason);
        }
        typed[columnIndex] = null;
        nulledValues++;
      } else {
        typed[columnIndex] = result;
      }
    }
    typedRows[rowIndex] = typed;
  }
  return { rows: typedRows, nulledValues };
}

/** As previewValue, but a number kept exact shows as the literal sent (unquoted), like other numbers. */
function preview(value: unknown): string {
  if (!(value instanceof ExactNumber)) return previewValue(value);
  return value.text.length > PREVIEW_LENGTH ? `${value.text.slice(0, PREVIEW_LENGTH)}…` : value.text;
}

const PREVIEW_LENGTH = 100;

function locate(options: TypedRowsOptions, rowIndex: number) {
  return { jobName: options.jobName, pageNumber: options.pageNumber, rowIndex: options.firstRowIndex + rowIndex };
}
