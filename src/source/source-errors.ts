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
      `tile ${jobName}: token request refused (HTTP ${status}): ${oauthError}` +
        (description ? ` — ${description}` : ''),
    );
    this.code = `auth_${oauthError.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
  }
}

/** The token issuer answered something that is not a token (HTML error page, 5xx, bad JSON…). */
export class TokenResponseError extends TilehouseError {
  readonly code = 'auth_response_invalid';
  constructor(jobName: string, detail: string) {
    super(`tile ${jobName}: token endpoint gave an unusable answer: ${detail}`);
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
  ) {
    super(`tile ${jobName}: page ${pageNumber}: export failed with HTTP ${status}: ${apiMessage}`);
  }
}

/** A page body that is not JSON or not the spec's Export result shape. */
export class ExportResponseError extends TilehouseError {
  readonly code = 'export_response_invalid';
  constructor(
    readonly jobName: string,
    readonly pageNumber: number,
    detail: string,
  ) {
    super(`tile ${jobName}: page ${pageNumber}: unusable export response: ${detail}`);
  }
}

/** A page that contradicts the pages before it (headers, dataTypes, row counts, totals). */
export class ExportPageMismatchError extends TilehouseError {
  readonly code = 'export_page_mismatch';
  constructor(
    readonly jobName: string,
    readonly pageNumber: number,
    readonly check: string,
    detail: string,
    /** True when the source changed under us, so one re-read from page 0 may succeed. */
    readonly drift: boolean,
  ) {
    super(`tile ${jobName}: page ${pageNumber}: check "${check}" failed: ${detail}`);
  }
}

/** The table kept changing: a re-read from page 0 also saw drift. */
export class ExportInconsistentError extends TilehouseError {
  readonly code = 'export_inconsistent';
  constructor(
    readonly jobName: string,
    first: ExportPageMismatchError,
    second: ExportPageMismatchError,
  ) {
    super(`tile ${jobName}: export inconsistent twice; first read: ${first.message}; re-read from page 0: ${second.message}`);
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
    super(`tile ${jobName}: ${what}: ${detail}`, options);
  }
}
