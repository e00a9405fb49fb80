import type { FileFormatName } from '../../error-codes.js';
import { TilehouseError } from '../../errors.js';
import { fileSystemFailureCode, fileSystemFailureHint, type FileSystemFailureCode } from '../file-system-failure.js';
import type { FormatNames } from './file-format.js';

/**
 * A file sink's own code, `<format>_<failure>` (`csv_write_failed`): the catalogue lists it for
 * every file format. A format the catalogue does not name (a test's) still gets its own word.
 */
function formatCode<Failure extends 'path_invalid' | 'write_failed' | 'target_unwritable' | 'writer_closed'>(
  format: FormatNames,
  failure: Failure,
): `${FileFormatName}_${Failure}` {
  return `${format.name}_${failure}` as `${FileFormatName}_${Failure}`;
}

/** A file sink's path template is unusable (unknown placeholder, escapes its directory…): `<format>_path_invalid`. */
export class FilePathInvalidError extends TilehouseError {
  readonly code: `${FileFormatName}_path_invalid`;

  constructor(
    format: FormatNames,
    readonly template: string,
    reason: string,
  ) {
    super(`${format.name} path ${JSON.stringify(template)}: ${reason}`);
    this.code = formatCode(format, 'path_invalid');
  }
}

/**
 * Writing, syncing or publishing a file failed; the previous file is left as it was. The code
 * says which known condition it was (`disk_full`, `permission_denied`, `target_is_directory`)
 * and is `<format>_write_failed` otherwise.
 */
export class FileWriteError extends TilehouseError {
  readonly code: FileSystemFailureCode | `${FileFormatName}_write_failed`;

  constructor(
    format: FormatNames,
    readonly jobName: string,
    readonly target: string,
    readonly operation: string,
    cause: unknown,
  ) {
    const code = fileSystemFailureCode(cause, formatCode(format, 'write_failed'));
    const hint = fileSystemFailureHint(code);
    super(
      `job ${jobName}: ${format.name} ${target}: ${operation} failed: ${cause instanceof Error ? cause.message : String(cause)}${hint ? ` (${hint})` : ''}`,
      { cause },
    );
    this.code = code;
  }
}

/**
 * The directory a file target goes below cannot be written, found before the run's first export
 * request: `permission_denied` (a read-only or foreign directory, the same code a write would
 * fail with), or `<format>_target_unwritable` (a regular file where a directory should be).
 */
export class FileTargetUnwritableError extends TilehouseError {
  readonly code: FileSystemFailureCode | `${FileFormatName}_target_unwritable`;

  constructor(
    format: FormatNames,
    readonly jobName: string,
    readonly directory: string,
    unwritable: { reason: string; errno: string },
  ) {
    const code = fileSystemFailureCode({ code: unwritable.errno }, formatCode(format, 'target_unwritable'));
    const hint = fileSystemFailureHint(code);
    super(
      `job ${jobName}: ${format.name} ${directory}: ${format.label} files cannot be written there: ${unwritable.reason}${hint ? ` (${hint})` : ''}; nothing was fetched`,
    );
    this.code = code;
  }
}

/** A writer was used after commit or abort (`<format>_writer_closed`): a pipeline bug, never a data problem. */
export class FileWriterClosedError extends TilehouseError {
  readonly code: `${FileFormatName}_writer_closed`;

  constructor(
    format: FormatNames,
    readonly target: string,
    readonly operation: string,
    readonly state: string,
  ) {
    super(`${format.name} ${target}: ${operation} called on a writer that is ${state}`);
    this.code = formatCode(format, 'writer_closed');
  }
}
