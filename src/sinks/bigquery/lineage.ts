/**
 * Lineage columns tell the runs of an append-mode table apart: which run wrote a row and when its
 * extraction started. Only `append` adds them; a replaced table or partition is one run by design.
 */
export const RUN_ID_COLUMN = { name: '_run_id', type: 'STRING' } as const;
export const EXTRACTED_AT_COLUMN = { name: '_extracted_at', type: 'TIMESTAMP' } as const;
export const LINEAGE_COLUMNS = [RUN_ID_COLUMN, EXTRACTED_AT_COLUMN] as const;

/** BigQuery column names are case-insensitive, so is this check. */
export function isLineageColumn(name: string): boolean {
  const lower = name.toLowerCase();
  return LINEAGE_COLUMNS.some((column) => column.name === lower);
}
