import type { ColumnType } from '../../value-types/column-types.js';

/** An identifier as PostgreSQL reads it quoted: always quoted, so case and every character but NUL are kept. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A string as an SQL literal (for statements that take no parameters: COMMENT ON). */
export function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** `"schema"."table"`. */
export function qualifiedName(schema: string, table: string): string {
  return `${quoteIdentifier(schema)}.${quoteIdentifier(table)}`;
}

/**
 * The PostgreSQL type of each column type (docs/postgres.md): NUMERIC keeps BigQuery's 38 digits
 * and 9 of scale, so one tile loads the same values into either warehouse.
 */
export const POSTGRES_TYPES: Readonly<Record<ColumnType, string>> = {
  INT64: 'bigint',
  NUMERIC: 'numeric(38,9)',
  FLOAT64: 'double precision',
  STRING: 'text',
  DATE: 'date',
  TIMESTAMP: 'timestamp with time zone',
};

/** The run ledger's table, one per schema, as on BigQuery one per dataset. */
export const LEDGER_TABLE = '_tilehouse_runs';

/** Every staging table's name starts so; the sweep finds them by it. */
export const STAGING_PREFIX = '_tilehouse_stage_';
