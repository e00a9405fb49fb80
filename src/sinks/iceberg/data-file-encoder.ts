import type { TypedRow } from '../../transform/column.js';
import { ParquetEncoder, type ParquetColumnSpec } from '../parquet/encoder/parquet-encoder.js';
import { ColumnMetrics, type DataFileMetrics } from './column-metrics.js';

/**
 * An Iceberg data file's bytes and its column metrics, from the same rows: the project's Parquet
 * encoder (each column with its field id) beside `ColumnMetrics`, so every data file the sink
 * writes (replace, append, a partition's days, a merge's file and its rewrites) has its bounds.
 */
export class DataFileEncoder {
  private readonly encoder: ParquetEncoder;
  private readonly columnMetrics: ColumnMetrics;

  constructor(columns: readonly (ParquetColumnSpec & { fieldId: number })[]) {
    this.encoder = new ParquetEncoder(columns);
    this.columnMetrics = new ColumnMetrics(columns);
  }

  get rowCount(): number {
    return this.encoder.rowCount;
  }

  addRows(rows: readonly TypedRow[]): Uint8Array[] {
    const pieces = this.encoder.addRows(rows);
    this.columnMetrics.add(rows);
    return pieces;
  }

  finish(): Uint8Array[] {
    return this.encoder.finish();
  }

  metrics(): DataFileMetrics {
    return this.columnMetrics.metrics();
  }
}
