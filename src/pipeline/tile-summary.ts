import type { SinkResult } from '../sinks/sink.js';
import type { ColumnType } from '../transform/column.js';

/** What one tile run did; logged per tile and collected into the run summary. */
export interface TileSummary {
  job: string;
  tile: string;
  status: 'succeeded' | 'failed';
  /** Rows written. */
  rows: number;
  /** Rows read but outside a backfill window. */
  rowsDropped: number;
  pages: number;
  durationMs: number;
  columns: Array<{ name: string; header: string; type: ColumnType }>;
  outputs: SinkResult[];
  warnings: string[];
  /** Values that did not parse and were nulled (onInvalidValue: null). */
  nulledValues: number;
  retries: number;
  reauthentications: number;
  /** Re-reads from page 0 after the source changed mid-export. */
  restarts: number;
  error?: { code: string; message: string };
}

export interface RunSummary {
  runId: string;
  startedAt: string;
  durationMs: number;
  tiles: TileSummary[];
  succeeded: number;
  failed: number;
}
