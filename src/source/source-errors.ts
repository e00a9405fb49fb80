import { OAUTH_ERRORS } from '../error-codes.js';
import { TilehouseError } from '../errors.js';

type OAuthError = (typeof OAUTH_ERRORS)[number];

/**
 * The token issuer refused us. `code` is `auth_<oauth error>` for the errors RFC 6749 lists (e.g.
 * `auth_invalid_client`) so alerts can tell a rotated secret from a wrong audience, and
 * `auth_refused` for any other (a code per string an issuer may invent would be no catalogue).
 * The message quotes the issuer's `error` and `error_description` and never contains the secret.
 */
export class AuthError extends TilehouseError {
  readonly code: `auth_${OAuthError}` | 'auth_refused';
  constructor(
    readonly jobName: string,
    readonly oauthError: string,
    readonly description: string | undefined,
    readonly status: number,
  ) {
    super(`job ${jobName}: token request refused (HTTP ${status}): ${oauthError}` + (description ? ` — ${description}` : ''));
    const known = oauthError.replace(/[^a-z0-9_]/gi, '_').toLowerCase();
    this.code = (OAUTH_ERRORS as readonly string[]).includes(known) ? `auth_${known as OAuthError}` : 'auth_refused';
  }
}

/** The token issuer answered something that is not a token (an HTML page, bad JSON, a 4xx without an OAuth error…). */
export class TokenResponseError extends TilehouseError {
  readonly code = 'auth_response_invalid';
  constructor(jobName: string, detail: string) {
    super(`job ${jobName}: token endpoint gave an unusable answer: ${detail}`);
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

/**
 * The server failed (HTTP 5xx) on the last attempt the retry policy allowed, at the export or the
 * token endpoint alike. Not the endpoint's refusal (`export_api_error`, `auth_*`: a 4xx, the same
 * request refused again on every run): a server error says nothing of the request, and a later run
 * may pass (a backfill window's re-run command is worth running). `detail` is the answer's own
 * message (an Error object's, an OAuth error's, or an excerpt of the body).
 */
export class SourceServerError extends TilehouseError {
  readonly code = 'source_server_error';
  constructor(
    readonly jobName: string,
    what: string,
    readonly status: number,
    detail: string,
  ) {
    super(`job ${jobName}: ${what}: the server failed with HTTP ${status}: ${detail}`);
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
