import { ERROR_CODES, type ErrorCode, type FileFormatName, type TargetKind } from './error-codes.js';
import { redactText } from './redaction.js';

/**
 * Every error tilehouse raises on purpose carries a stable machine `code` (for alerts, tests and
 * the run summary) and a message meant for the person on call: it names the tile, field and value.
 * The code is one of the catalogue's (`src/error-codes.ts`), and so is how the process exits.
 */
export abstract class TilehouseError extends Error {
  abstract readonly code: ErrorCode;
  /** A failure at a sink's target: the target's kind (one code serves every kind, this tells them apart). */
  readonly targetKind?: TargetKind;
  /** A failure at a file target: its format. */
  readonly format?: FileFormatName;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }

  /** The exit code the CLI maps this failure onto: 2 bad configuration or usage, 3 partially published, 1 otherwise (a stop exits by its signal). */
  get exitCode(): 1 | 2 | 3 {
    const exit = ERROR_CODES[this.code].exit;
    return exit === 'signal' ? 1 : exit;
  }
}

/** What the run summary and the log line say of a failure: its code, message, whether a re-run may pass, and where it happened when known. */
export interface ErrorReport {
  /** One of the catalogue's codes (a string here: a summary read back may hold a code of another version). */
  code: string;
  message: string;
  /**
   * Whether the same command, run again unchanged, may pass: the catalogue's word on the code (an
   * orchestrator's retry rule keys on it); absent in a summary of a version that did not say.
   */
  retryable?: boolean;
  targetKind?: TargetKind;
  format?: FileFormatName;
}

/**
 * The report of anything thrown: a TilehouseError's code, the catalogue's `retryable` for it, and its place, `internal_error` for anything
 * else. Given the job, its message names it (`job <name>: …`) also when what threw could not know
 * it (a value encoder, a page's shape, a stop's deadline), so a run summary read on its own says
 * which job failed.
 */
export function errorReport(error: unknown, jobName?: string): ErrorReport {
  // Redacted where it is made: the summary, the run history, the span's status and the lineage event all carry it (issue 61).
  const message = redactText(jobName === undefined ? messageOf(error) : namingJob(jobName, messageOf(error)));
  if (!(error instanceof TilehouseError)) return { code: 'internal_error', message, retryable: ERROR_CODES.internal_error.retryable };
  return {
    code: error.code,
    message,
    retryable: ERROR_CODES[error.code].retryable,
    ...(error.targetKind === undefined ? {} : { targetKind: error.targetKind }),
    ...(error.format === undefined ? {} : { format: error.format }),
  };
}

/** `job <name>: <message>`, unless the message starts so already. */
export function namingJob(jobName: string, message: string): string {
  const prefix = `job ${jobName}: `;
  return message.startsWith(prefix) ? message : `${prefix}${message}`;
}

/**
 * The message without its leading `job <name>: `: for a line or an outer message that names the
 * job already (`FAIL job <name>: …`, a partial publish quoting its cause), so it is named once.
 */
export function withoutJob(jobName: string, message: string): string {
  const prefix = `job ${jobName}: `;
  return message.startsWith(prefix) ? message.slice(prefix.length) : message;
}

export function isTilehouseError(error: unknown): error is TilehouseError {
  return error instanceof TilehouseError;
}

/** The message of anything thrown, without assuming it is an Error. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
