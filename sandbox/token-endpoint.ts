import { timingSafeEqual } from 'node:crypto';
import { authenticationError, isJsonContentType, parseJson, type HttpAnswer } from './http-answer.js';
import type { TokenStore } from './token-store.js';

export interface TokenIssuer {
  clientId: string;
  clientSecret: string;
  audience: string;
  lifetimeSeconds: number;
  tokens: TokenStore;
}

/**
 * POST /oauth/token, client-credentials only. Checks run in the order an OAuth server runs them:
 * the request must be readable, then the client must authenticate (nothing else is revealed to an
 * unknown client), then the grant and the audience are judged.
 *
 * Status codes follow RFC 6749 §5.2, with `audience` handled as Auth0 does (the body fields
 * client_id/client_secret/audience/grant_type are Auth0's): a wrong audience is
 * 403 access_denied — the client is genuine but not allowed that API — and a missing one is
 * 400 invalid_request.
 */
export function answerTokenRequest(contentType: string | undefined, rawBody: Buffer, issuer: TokenIssuer): HttpAnswer {
  if (!isJsonContentType(contentType)) {
    return authenticationError(400, 'invalid_request', 'the body must be JSON sent with content-type: application/json');
  }
  const body = parseJson(rawBody);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return authenticationError(400, 'invalid_request', 'the body must be a JSON object');
  }
  const { client_id: clientId, client_secret: clientSecret, audience, grant_type: grantType } = body as Record<string, unknown>;

  if (typeof clientId !== 'string' || typeof clientSecret !== 'string') {
    return authenticationError(401, 'invalid_client', 'client_id and client_secret are required');
  }
  if (!sameSecret(clientId, issuer.clientId) || !sameSecret(clientSecret, issuer.clientSecret)) {
    return authenticationError(401, 'invalid_client', 'unknown client or wrong client secret');
  }
  if (grantType === 'refresh_token') {
    // The spec says a refresh request exists but shows no successful one; this issuer never hands out refresh tokens.
    return authenticationError(400, 'invalid_grant', 'refresh tokens are not issued to this client; request a new token with grant_type client_credentials');
  }
  if (grantType !== 'client_credentials') {
    return authenticationError(
      400,
      'unsupported_grant_type',
      grantType === undefined
        ? 'grant_type is required and must be client_credentials'
        : `grant_type ${JSON.stringify(grantType)} is not supported; use client_credentials`,
    );
  }
  if (typeof audience !== 'string' || audience === '') {
    return authenticationError(400, 'invalid_request', 'audience is required: the tenant host');
  }
  if (audience !== issuer.audience) {
    return authenticationError(403, 'access_denied', `client is not authorized to access audience ${JSON.stringify(audience)}`);
  }
  const accessToken = issuer.tokens.issue(audience, issuer.lifetimeSeconds);
  return {
    status: 200,
    body: { access_token: accessToken, token_type: 'Bearer', expires_in: issuer.lifetimeSeconds },
    // RFC 6749 §5.1: token responses must not be cached.
    headers: { 'cache-control': 'no-store', pragma: 'no-cache' },
  };
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
