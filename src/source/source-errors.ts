import { TilehouseError } from '../errors.js';

/**
 * The token issuer refused us. `code` is `auth_<oauth error>` (e.g. `auth_invalid_client`) so
 * alerts can tell a rotated secret from a wrong audience. The message quotes the issuer's
 * `error` and `error_description` and never contains the secret.
 */
export class AuthError extends TilehouseError {
  readonly code: string;
  constructor(
    readonly jobName: string,
    readonly oauthError: string,
    readonly description: string | undefined,
    readonly status: number,
  ) {
    super(
      `job ${jobName}: token request refused (HTTP ${status}): ${oauthError}` +
        (description ? ` — ${description}` : ''),
    );
    this.code = `auth_${oauthError.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
  }
}

/** The token issuer answered something that is not a token (HTML error page, 5xx, bad JSON…). */
export class TokenResponseError extends TilehouseError {
  readonly code = 'auth_response_invalid';
  constructor(jobName: string, detail: string) {
    super(`job ${jobName}: token endpoint gave an unusable answer: ${detail}`);
  }
}

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

/** A page body that is not JSON or not the spec's Export result shape. */
export class ExportResponseError extends TilehouseError {
  readonly code: string = 'export_response_invalid';
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
  override readonly code: string = 'export_body_corrupt';
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

/**
 * The source answered with a redirect (3xx). Not followed: the request carries the bearer token
 * (or, to the token endpoint, the client secret), and following would send it to whatever host
 * the Location names. The message says where it pointed, so the configuration can be fixed.
 */
export class SourceRedirectError extends TilehouseError {
  readonly code = 'source_redirect';
  constructor(
    readonly jobName: string,
    what: string,
    readonly status: number,
    readonly location: string | undefined,
  ) {
    super(
      `job ${jobName}: ${what}: HTTP ${status} redirect ${location === undefined ? 'without a Location header' : `to ${location}`}; ` +
        'tilehouse does not follow redirects, because the request carries a bearer token (or the client secret) that would go to another host; ' +
        'if the service moved, set source.baseUrl (or source.authUrl) to the new address',
    );
  }
}

/** A page that contradicts the pages before it (headers, dataTypes, row counts, totals). */
export class ExportPageMismatchError extends TilehouseError {
  readonly code: string = 'export_page_mismatch';
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
  override readonly code: string = 'export_page_identity';
}

/** The table kept changing: a re-read from page 0 also saw drift. */
export class ExportInconsistentError extends TilehouseError {
  readonly code = 'export_inconsistent';
  constructor(
    readonly jobName: string,
    first: ExportPageMismatchError,
    second: ExportPageMismatchError,
  ) {
    super(`job ${jobName}: export inconsistent twice; first read: ${first.message}; re-read from page 0: ${second.message}`);
  }
}

/** The network failed and retries (if any) were exhausted. */
export class SourceTransportError extends TilehouseError {
  readonly code = 'source_unreachable';
  constructor(
    readonly jobName: string,
    what: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`job ${jobName}: ${what}: ${detail}`, options);
  }
}

/** Retries (if any) ended on a request that got no complete answer within its overall deadline. */
export class SourceDeadlineError extends TilehouseError {
  readonly code = 'source_deadline_exceeded';
  constructor(
    readonly jobName: string,
    what: string,
    readonly deadlineMs: number,
    options?: { cause?: unknown },
  ) {
    super(`job ${jobName}: ${what}: no complete answer within ${deadlineMs} ms (headers and body together)`, options);
  }
}

/**
 * The source asked us to wait longer than this job waits. Refused at once rather than waited
 * out capped: retrying before the time the source named would only be turned away again.
 */
export class SourceRetryAfterError extends TilehouseError {
  readonly code = 'source_retry_after_too_long';
  constructor(
    readonly jobName: string,
    what: string,
    readonly status: number,
    readonly retryAfter: string,
    readonly ceilingMs: number,
    detail: string,
  ) {
    super(`job ${jobName}: ${what}: HTTP ${status} with Retry-After: ${retryAfter} (more than the ${formatSeconds(ceilingMs)} this job waits): ${detail}`);
  }
}

function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(3).replace(/0+$/, '')} s`;
}
