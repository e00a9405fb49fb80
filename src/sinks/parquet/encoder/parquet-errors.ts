import { TilehouseError } from '../../../errors.js';

/**
 * Bytes that were expected to end a Parquet file written by tilehouse are not one: no "PAR1"
 * magic, a footer that runs past the bytes given or does not parse, or a column of a type
 * tilehouse never writes (`reason` says which). For a stored target that is `target_unreadable`,
 * as for a CSV target (parquet-format.ts hands it on as the file sink's FileTargetUnreadableError,
 * which the sink names the job in).
 */
export class ParquetFileInvalidError extends TilehouseError {
  readonly code = 'target_unreadable';
  override readonly format = 'parquet';

  constructor(
    readonly source: string,
    readonly reason: string,
  ) {
    super(`${source}: not a Parquet file tilehouse can read: ${reason}`);
  }
}

/**
 * A typed value the encoder cannot represent in its column's Parquet type (a NUMERIC beyond
 * DECIMAL(38,9), a DATE that is not YYYY-MM-DD, a value of the wrong JavaScript type). Transform
 * never produces one; this guards the file against a caller that skipped it.
 */
export class ParquetValueError extends TilehouseError {
  readonly code = 'parquet_value_invalid';

  constructor(
    readonly column: string,
    readonly value: unknown,
    reason: string,
  ) {
    super(`parquet column ${JSON.stringify(column)}: value ${describe(value)}: ${reason}`);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'bigint') return `${value}n`;
  const text = typeof value === 'string' ? JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value) : String(value);
  return text;
}

/** The encoder was given an unusable schema or options (a tile without visible columns, an unknown compression). */
export class ParquetSchemaError extends TilehouseError {
  readonly code = 'parquet_schema_invalid';
}

/** The encoder was used after `finish()`, or after a row it refused left its columns uneven: a bug in tilehouse (`internal_error`). */
export class ParquetEncoderClosedError extends TilehouseError {
  readonly code = 'internal_error';
  override readonly format = 'parquet';
}
