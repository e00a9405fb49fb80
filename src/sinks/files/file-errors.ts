import type { FileFormatName, TargetKind } from '../../error-codes.js';
import { TilehouseError } from '../../errors.js';
import { fileTargetKind } from '../stores/store-errors.js';
import type { FormatNames } from './file-format.js';

/**
 * A file sink's path template is unusable (unknown placeholder, escapes its directory…):
 * `path_invalid`. Found when the sink is built (reported as the job file's configuration error)
 * or when a run resolves its target, which names the job.
 */
export class FilePathInvalidError extends TilehouseError {
  readonly code = 'path_invalid';
  override readonly targetKind: TargetKind;
  override readonly format: FileFormatName;

  constructor(
    format: FormatNames,
    readonly template: string,
    reason: string,
    jobName?: string,
  ) {
    super(`${jobName === undefined ? '' : `job ${jobName}: `}${format.name} path ${JSON.stringify(template)}: ${reason}`);
    this.targetKind = fileTargetKind(template);
    this.format = format.name as FileFormatName;
  }
}

/**
 * A file sink's existing target cannot be read as its format (a `.csv.gz` that is not gzip):
 * `target_unreadable`. The format finds it without knowing the job; the sink names the job
 * (`forJob`) before it leaves the run.
 */
export class FileTargetUnreadableError extends TilehouseError {
  readonly code = 'target_unreadable';
  override readonly targetKind: TargetKind;
  override readonly format: FileFormatName;

  constructor(
    private readonly formatNames: FormatNames,
    readonly target: string,
    private readonly reason: string,
    cause: unknown,
    readonly jobName?: string,
  ) {
    super(
      `${jobName === undefined ? '' : `job ${jobName}: `}${formatNames.name} ${target}: the existing file cannot be read as ${formatNames.label}: ${reason}`,
      {
        cause,
      },
    );
    this.targetKind = fileTargetKind(target);
    this.format = formatNames.name as FileFormatName;
  }

  /** The same failure, its message naming the job. */
  forJob(jobName: string): FileTargetUnreadableError {
    return this.jobName === undefined ? new FileTargetUnreadableError(this.formatNames, this.target, this.reason, this.cause, jobName) : this;
  }
}
