import type { Column, TypedRow } from '../../transform/column.js';
import { BigQuerySinkStateError } from './bigquery-errors.js';
import { encodeValue, toRfc3339 } from './encode-value.js';
import { EXTRACTED_AT_COLUMN, RUN_ID_COLUMN } from './lineage.js';
import { countNoun } from '../../count-noun.js';

/** Values of the lineage columns, identical on every row of one run. */
export interface Lineage {
  runId: string;
  extractedAt: Date;
}

/**
 * A row encoder for one run: returns one newline-terminated JSON object per row, keyed by column
 * name. Keys are escaped once up front; a load file can hold millions of rows.
 */
export function rowEncoder(columns: readonly Column[], lineage?: Lineage): (row: TypedRow) => string {
  const keys = columns.map((column) => `${JSON.stringify(column.name)}:`);
  const lineageText =
    lineage === undefined
      ? ''
      : `${columns.length > 0 ? ',' : ''}` +
        `${JSON.stringify(RUN_ID_COLUMN.name)}:${JSON.stringify(lineage.runId)},` +
        `${JSON.stringify(EXTRACTED_AT_COLUMN.name)}:${JSON.stringify(toRfc3339(lineage.extractedAt.getTime(), EXTRACTED_AT_COLUMN.name))}`;

  return (row) => {
    if (row.length !== columns.length) {
      throw new BigQuerySinkStateError(`a row has ${countNoun(row.length, 'value')} for ${countNoun(columns.length, 'column')}`);
    }
    let line = '{';
    for (let index = 0; index < columns.length; index++) {
      if (index > 0) line += ',';
      line += keys[index] + encodeValue(row[index] ?? null, columns[index]!);
    }
    return `${line}${lineageText}}\n`;
  };
}
