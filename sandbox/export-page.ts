import type { EvaluatedTable } from './query-evaluator.js';
import { encodeRow, toObjectRow, type WireFormat } from './wire-format.js';

export interface PageRequest {
  pageNumber: number;
  itemsPerPage: number;
}

export interface Navigation {
  hasPrev: boolean;
  hasNext: boolean;
  /** Rows on this page. */
  rowsCount: number;
  /** Rows in the whole result. */
  totalRows: number;
}

export interface ExportResult {
  navigation: Navigation;
  headers: string[];
  dataTypes: string[];
  rows: unknown[];
  sourceImported: false;
  query: unknown;
}

/**
 * One page of an evaluated table. Pages are 0-based and `itemsPerPage` long; the last page may be
 * short, and a page beyond the end is empty with hasNext false (hasPrev stays true for any page > 0).
 */
export function buildPage(table: EvaluatedTable, page: PageRequest, wire: WireFormat, echo: unknown): ExportResult {
  const start = Math.min(page.pageNumber * page.itemsPerPage, table.totalRows);
  const end = Math.min(start + page.itemsPerPage, table.totalRows);
  const headers = [...table.headers];
  const rows: unknown[] = [];
  for (let i = start; i < end; i++) {
    const cells = encodeRow(table, i, wire.datetimeFormat);
    rows.push(wire.rowShape === 'object' ? toObjectRow(headers, cells) : cells);
  }
  return {
    navigation: {
      hasPrev: page.pageNumber > 0,
      hasNext: end < table.totalRows,
      rowsCount: rows.length,
      totalRows: table.totalRows,
    },
    headers,
    dataTypes: [...table.dataTypes],
    rows,
    sourceImported: false,
    query: echo,
  };
}
