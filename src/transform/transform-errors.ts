import { TilehouseError } from '../errors.js';
import type { ColumnType } from '../value-types/column-types.js';
import { countNoun } from '../count-noun.js';

/**
 * The job's `columns` section asks for something the export cannot give: a header the tile does
 * not have, or a type the API's dataType cannot be read as. A configuration mistake, so exit 2.
 */
export class ColumnOverrideInvalidError extends TilehouseError {
  readonly code = 'column_override_invalid';

  constructor(
    readonly header: string,
    /** The API dataType of the column; undefined when no such header exists. */
    readonly fromType: string | undefined,
    readonly toType: string,
    reason: string,
  ) {
    super(
      fromType === undefined
        ? `columns override "${header}" → ${toType}: ${reason}`
        : `columns override "${header}": dataType ${fromType} cannot be loaded as ${toType}; ${reason}`,
    );
  }
}

/** The export page is not a table: `headers` and `dataTypes` disagree on the number of columns. */
export class ColumnCountMismatchError extends TilehouseError {
  readonly code = 'column_count_mismatch';

  constructor(
    readonly headerCount: number,
    readonly dataTypeCount: number,
  ) {
    super(`export result has ${countNoun(headerCount, 'header')} but ${countNoun(dataTypeCount, 'dataType')}; every column needs exactly one of each`);
  }
}

/** Where in the export a row or value sits, so the person on call can find it in the tile. */
export interface RowLocation {
  jobName: string;
  pageNumber: number;
  /** Absolute, 0-based position of the row in the whole export (not within the page). */
  rowIndex: number;
}

/** A value that does not parse as its column's type while `onInvalidValue` is `fail`. */
export class ValueInvalidError extends TilehouseError {
  readonly code = 'value_invalid';

  constructor(
    readonly location: RowLocation,
    readonly header: string,
    readonly columnType: ColumnType,
    /** The offending value as JSON, cut to about 100 characters. */
    readonly valuePreview: string,
    readonly reason: string,
  ) {
    super(
      `job ${location.jobName}: page ${location.pageNumber}, row ${location.rowIndex}, ` +
        `column "${header}" (${columnType}): value ${valuePreview} is invalid: ${reason}`,
    );
  }
}

const PREVIEW_LENGTH = 100;

/**
 * JSON text of a raw value for error messages, cut to ~100 characters. Strings are cut before
 * encoding so a multi-megabyte description does not get serialised just to be thrown away.
 */
export function previewValue(value: unknown): string {
  if (typeof value === 'string') {
    return value.length > PREVIEW_LENGTH ? `${JSON.stringify(value.slice(0, PREVIEW_LENGTH))}…` : JSON.stringify(value);
  }
  let text: string;
  try {
    text = typeof value === 'bigint' ? String(value) : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > PREVIEW_LENGTH ? `${text.slice(0, PREVIEW_LENGTH)}…` : text;
}
