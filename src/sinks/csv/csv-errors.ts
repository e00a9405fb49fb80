import { TilehouseError } from '../../errors.js';
import { fileSystemFailureCode, fileSystemFailureHint } from '../file-system-failure.js';

/** The CSV sink's path template is unusable (unknown placeholder, escapes its directory…). */
export class CsvPathInvalidError extends TilehouseError {
  readonly code = 'csv_path_invalid';
  override readonly exitCode = 2;

  constructor(
    readonly template: string,
    reason: string,
  ) {
    super(`csv path ${JSON.stringify(template)}: ${reason}`);
  }
}

/**
 * Writing, syncing or publishing the CSV file failed; the previous file is left as it was. The
 * code says which known condition it was (`disk_full`, `permission_denied`, `target_is_directory`)
 * and is `csv_write_failed` otherwise.
 */
export class CsvWriteError extends TilehouseError {
  readonly code: string;

  constructor(
    readonly jobName: string,
    readonly target: string,
    readonly operation: string,
    cause: unknown,
  ) {
    const code = fileSystemFailureCode(cause, 'csv_write_failed');
    const hint = fileSystemFailureHint(code);
    super(
      `job ${jobName}: csv ${target}: ${operation} failed: ${cause instanceof Error ? cause.message : String(cause)}${hint ? ` (${hint})` : ''}`,
      { cause },
    );
    this.code = code;
  }
}

/**
 * The directory a CSV target goes below cannot be written, found before the run's first export
 * request: `permission_denied` (a read-only or foreign directory, the same code a write would
 * fail with), or `csv_target_unwritable` (a regular file where a directory should be).
 */
export class CsvTargetUnwritableError extends TilehouseError {
  readonly code: string;

  constructor(
    readonly jobName: string,
    readonly directory: string,
    unwritable: { reason: string; errno: string },
  ) {
    const code = fileSystemFailureCode({ code: unwritable.errno }, 'csv_target_unwritable');
    const hint = fileSystemFailureHint(code);
    super(`job ${jobName}: csv ${directory}: CSV files cannot be written there: ${unwritable.reason}${hint ? ` (${hint})` : ''}; nothing was fetched`);
    this.code = code;
  }
}

/** A writer was used after commit or abort — a pipeline bug, never a data problem. */
export class CsvWriterClosedError extends TilehouseError {
  readonly code = 'csv_writer_closed';

  constructor(
    readonly target: string,
    readonly operation: string,
    readonly state: string,
  ) {
    super(`csv ${target}: ${operation} called on a writer that is ${state}`);
  }
}
