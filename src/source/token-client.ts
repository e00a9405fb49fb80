import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { excerpt, postJson, type RequestTimeouts } from './http.js';
import { classifyAnswer, settle, type HttpOutcome } from './http-answer.js';
import type { RetryEvent } from '../retry.js';
import { retryAfterCeiling, withSourceRetries, type RetryPolicy } from './retry-policy.js';
import { AuthError, TokenResponseError } from './source-errors.js';
import { registerSecret } from '../secret-scrubber.js';

const tokenResponseSchema = z
  .object({
    access_token: z.string().min(1),
    token_type: z.string().refine((type) => type.toLowerCase() === 'bearer', 'token_type must be Bearer'),
    // Some issuers send "3600" (RFC 6749 says a number); a string of digits means the same.
    // Anything else is refused rather than read as "no expiry".
    expires_in: z
      .unknown()
      .transform((value, ctx) => {
        const seconds = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : Number.NaN;
        if (!(Number.isFinite(seconds) && seconds > 0)) {
          ctx.addIssue({ code: 'custom', message: `must be a positive number of seconds, got ${JSON.stringify(value)}` });
          return z.NEVER;
        }
        return seconds;
      })
      .optional(),
  })
  .loose();

const authErrorSchema = z.object({ error: z.string().min(1), error_description: z.string().optional() }).loose();

export interface Token {
  accessToken: string;
  /** Seconds the issuer says the token lives, when it says. */
  expiresIn?: number;
  /**
   * The issuer's clock (epoch ms, from the answer's `Date` header), when it sent one: backfill
   * windows are computed against the server's clock, not ours.
   */
  serverDate?: number;
  /** The `Date` header as sent, when it was sent but did not parse (for the message that says so). */
  unparsedDate?: string;
}

export interface TokenRequest {
  authUrl: string;
  clientId: string;
  clientSecret: string;
  audience: string;
  jobName: string;
  dispatcher: Dispatcher;
  timeouts: RequestTimeouts;
  retry: RetryPolicy;
  signal?: AbortSignal;
  onRetry?: (event: RetryEvent) => void;
}

export function tokenUrl(authUrl: string): string {
  return new URL('oauth/token', authUrl.endsWith('/') ? authUrl : `${authUrl}/`).toString();
}

/** The `Date` header as epoch ms, when it parses (RFC 9110 §6.6.1: an IMF-fixdate). */
function serverDateOf(value: string | string[] | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : date;
}

/** OAuth 2.0 client-credentials grant against `{authUrl}/oauth/token` (spec, endpoint 1). */
export async function fetchToken(req: TokenRequest): Promise<Token> {
  const url = tokenUrl(req.authUrl);
  return withSourceRetries(
    async () => {
      let outcome: HttpOutcome;
      try {
        const answer = await postJson({
          url,
          dispatcher: req.dispatcher,
          timeouts: req.timeouts,
          signal: req.signal,
          body: {
            client_id: req.clientId,
            client_secret: req.clientSecret,
            audience: req.audience,
            grant_type: 'client_credentials',
          },
        });
        outcome = { answer };
      } catch (error) {
        outcome = { transportError: error };
      }

      const verdict = classifyAnswer(outcome, {
        jobName: req.jobName,
        what: 'token request',
        retryAfterCeilingMs: retryAfterCeiling(req.retry),
        bodyError: (answer, detail) => new TokenResponseError(req.jobName, `HTTP ${answer.status}: ${detail}`),
        statusError: (answer, body) => {
          const oauthError = authErrorSchema.safeParse(body);
          if (oauthError.success) {
            const { error, error_description: description } = oauthError.data;
            return { error: new AuthError(req.jobName, error, description, answer.status), detail: description ? `${error} — ${description}` : error };
          }
          const detail = excerpt(answer.text) || '(empty body)';
          return { error: new TokenResponseError(req.jobName, `HTTP ${answer.status}: ${detail}`), detail };
        },
      });
      settle(verdict);
      const token = tokenResponseSchema.safeParse(verdict.value);
      if (!token.success) {
        throw new TokenResponseError(
          req.jobName,
          `HTTP ${verdict.status} without a usable token: ${token.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`,
        );
      }
      // From here on the token may appear in no output, whoever echoes it (an API error message).
      registerSecret(token.data.access_token);
      const result: Token = { accessToken: token.data.access_token };
      if (token.data.expires_in !== undefined) result.expiresIn = token.data.expires_in;
      if ('answer' in outcome) {
        const header = outcome.answer.headers.date;
        const serverDate = serverDateOf(header);
        if (serverDate !== undefined) result.serverDate = serverDate;
        else if (header !== undefined) result.unparsedDate = Array.isArray(header) ? header.join(', ') : header;
      }
      return result;
    },
    req.retry,
    { signal: req.signal, onRetry: req.onRetry },
  );
}
