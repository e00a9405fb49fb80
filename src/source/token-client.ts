import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { excerpt, isTransientNetworkError, postJson, RETRYABLE_STATUSES, tryParseJson, type RequestTimeouts } from './http.js';
import { parseRetryAfter, RetryableFailure, withRetries, type RetryEvent, type RetryPolicy } from './retry-policy.js';
import { AuthError, SourceTransportError, TokenResponseError } from './source-errors.js';

const tokenResponseSchema = z
  .object({
    access_token: z.string().min(1),
    token_type: z.string().refine((type) => type.toLowerCase() === 'bearer', 'token_type must be Bearer'),
    expires_in: z.number().positive().optional(),
  })
  .loose();

const authErrorSchema = z.object({ error: z.string().min(1), error_description: z.string().optional() }).loose();

export interface Token {
  accessToken: string;
  /** Seconds the issuer says the token lives, when it says. */
  expiresIn?: number;
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

/** OAuth 2.0 client-credentials grant against `{authUrl}/oauth/token` (spec, endpoint 1). */
export async function fetchToken(req: TokenRequest): Promise<Token> {
  const url = tokenUrl(req.authUrl);
  return withRetries(
    async () => {
      let answer;
      try {
        answer = await postJson({
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
      } catch (error) {
        const failure = new SourceTransportError(req.jobName, 'token request', (error as Error).message, { cause: error });
        if (isTransientNetworkError(error)) throw new RetryableFailure(failure);
        throw error;
      }

      const parsed = tryParseJson(answer.text);
      if (answer.status >= 200 && answer.status < 300) {
        if (!parsed.ok) throw new RetryableFailure(new TokenResponseError(req.jobName, `HTTP ${answer.status} with a body that is not JSON: ${excerpt(answer.text)}`));
        const token = tokenResponseSchema.safeParse(parsed.value);
        if (!token.success) {
          throw new TokenResponseError(req.jobName, `HTTP ${answer.status} without a usable token: ${token.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ')}`);
        }
        const result: Token = { accessToken: token.data.access_token };
        if (token.data.expires_in !== undefined) result.expiresIn = token.data.expires_in;
        return result;
      }

      const oauthError = parsed.ok ? authErrorSchema.safeParse(parsed.value) : undefined;
      const error =
        oauthError?.success === true
          ? new AuthError(req.jobName, oauthError.data.error, oauthError.data.error_description, answer.status)
          : new TokenResponseError(req.jobName, `HTTP ${answer.status}: ${excerpt(answer.text) || '(empty body)'}`);
      if (RETRYABLE_STATUSES.has(answer.status)) throw new RetryableFailure(error, parseRetryAfter(answer.headers['retry-after']));
      throw error;
    },
    req.retry,
    { signal: req.signal, onRetry: req.onRetry },
  );
}
