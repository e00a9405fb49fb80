import type { ColumnType } from '../value-types/column-types.js';

/**
 * The typed shape a tile's table takes inside tilehouse. Sinks receive only these types; nothing
 * downstream of transform sees the raw API page.
 */

export interface Column {
  /** Warehouse-safe, unique name derived from the header (letters, digits, underscore). */
  name: string;
  /** The header exactly as the tile shows it; CSV headers and the run summary use it. */
  header: string;
  type: ColumnType;
  /** The `dataTypes` entry the API gave for this column, kept for diagnostics. */
  sourceDataType: string;
}

/**
 * One typed cell. The JavaScript representation depends on the column type:
 * - FLOAT64   → number (finite)
 * - INT64     → bigint (exact beyond 2^53)
 * - NUMERIC   → string, canonical decimal (e.g. "-12.5", never exponent form)
 * - STRING    → string
 * - TIMESTAMP → number, epoch milliseconds (UTC)
 * - DATE      → string, "YYYY-MM-DD"
 * - any type  → null for a missing value
 */
export type TypedValue = number | bigint | string | null;
export type TypedRow = TypedValue[];
