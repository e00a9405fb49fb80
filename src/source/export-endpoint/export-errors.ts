import type { ErrorCode } from '../../error-codes.js';
import { TilehouseError, withoutJob } from '../../errors.js';

/** The export endpoint answered with a Regular error object (or a bare HTTP error). */
export class ExportApiError extends TilehouseError {
  readonly code = 'export_api_error';
  constructor(
    readonly jobName: string,
    readonly pageNumber: number,
    readonly status: number,
    readonly apiMessage: string,
    tile?: { id: string; param: string },
  ) {
    // A 400 names the tile it was about: a wrong tile id and a wrong tileParam (the id sent under
    // another name) both come back as "invalid id", and only the request tells them apart.
    const about = status === 400 && tile !== undefined ? ` for tile ${tile.id} (sent as query item ${tile.param})` : '';
    const hint = status === 400 && tile !== undefined ? "; check the job's tile and source.tileParam" : '';
    super(`job ${jobName}: page ${pageNumber}: export${about} failed with HTTP ${status}: ${apiMessage}${hint}`);
  }
}

/** The export endpoint's refusal as ExportApiError tells it: the HTTP status, the service's message, and the tile a 400 names. */
interface ExportRefusal {
  status: number;
  apiMessage: string;
  tile?: string;
}

const REFUSAL =
  /page \d+: export(?: for tile (\S+) \(sent as query item \S+\))? failed with HTTP (4\d\d): (.*?)(?:; check the job's tile and source\.tileParam)?$/s;

/**
 * An ExportApiError's message read back (a run's record keeps a failure as its code and message
 * only): a 4xx the source answered, with the tile the request named; undefined for any other
 * message. This module writes that message, so it alone reads it back.
 */
export function exportRefusalOf(message: string): ExportRefusal | undefined {
  const match = REFUSAL.exec(message);
  if (match === null) return undefined;
  return { status: Number(match[2]), apiMessage: match[3]!, ...(match[1] === undefined ? {} : { tile: match[1] }) };
}

/** A page body that is not JSON or not the spec's Export result shape. */
export class ExportResponseError extends TilehouseError {
  readonly code: ErrorCode = 'export_response_invalid';
  constructor(
    readonly jobName: string,
    readonly pageNumber: number,
    detail: string,
  ) {
    super(`job ${jobName}: page ${pageNumber}: unusable export response: ${detail}`);
  }
}

/**
 * A compressed page body whose stream could not be decoded (cut short or corrupt) on the last
 * attempt the retry policy allowed. Its own code, apart from export_response_invalid (a body
 * wrong as sent, never retried): this one was retried and may well pass on the next run.
 */
export class ExportBodyCorruptError extends ExportResponseError {
  override readonly code: ErrorCode = 'export_body_corrupt';
  constructor(
    jobName: string,
    pageNumber: number,
    readonly encoding: string,
    detail: string,
    attempt: number,
  ) {
    super(jobName, pageNumber, `${detail} (attempt ${attempt}; retried while the retry policy allowed)`);
  }
}

/** A page that contradicts the pages before it (headers, dataTypes, row counts, totals). */
export class ExportPageMismatchError extends TilehouseError {
  readonly code: ErrorCode = 'export_page_mismatch';
  constructor(
    readonly jobName: string,
    readonly pageNumber: number,
    readonly check: string,
    detail: string,
    /** True when the source changed under us, so one re-read from page 0 may succeed. */
    readonly drift: boolean,
  ) {
    super(`job ${jobName}: page ${pageNumber}: check "${check}" failed: ${detail}`);
  }
}

/**
 * A page that does not prove it is the page asked for: its echoed query names another page,
 * `hasPrev` contradicts its number, or its rows repeat an earlier page's (a cache keyed on the
 * URL alone would do this, since the page number travels in the POST body). Handled like drift:
 * one re-read from page 0, then `export_inconsistent`.
 */
export class ExportPageIdentityError extends ExportPageMismatchError {
  override readonly code: ErrorCode = 'export_page_identity';
}

/** The table kept changing: a re-read from page 0 also saw drift. */
export class ExportInconsistentError extends TilehouseError {
  readonly code = 'export_inconsistent';
  constructor(
    readonly jobName: string,
    first: ExportPageMismatchError,
    second: ExportPageMismatchError,
  ) {
    super(
      `job ${jobName}: export inconsistent twice; first read: ${withoutJob(jobName, first.message)}; re-read from page 0: ${withoutJob(jobName, second.message)}`,
    );
  }
}
