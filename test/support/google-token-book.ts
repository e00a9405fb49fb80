import { randomBytes } from 'node:crypto';

/**
 * The access tokens the test's fake Google token issuers (the metadata server, the OAuth token
 * endpoint of a key file) gave out, with their expiry, so that the bearer proxy in front of the
 * BigQuery emulator and fake-gcs-server can tell a valid token from an expired, revoked or
 * unknown one, as Google does.
 */
export type TokenVerdict = 'valid' | 'expired' | 'revoked' | 'unknown' | 'anonymous';

export interface IssuedToken {
  token: string;
  issuer: string;
  issuedAt: number;
  expiresAt: number;
}

export class TokenBook {
  private readonly tokens = new Map<string, IssuedToken>();
  private readonly revoked = new Set<string>();

  /** A fresh token living `lifetimeSeconds`. */
  issue(issuer: string, lifetimeSeconds: number): IssuedToken {
    const now = Date.now();
    const issued = { token: `ya29.test-${randomBytes(24).toString('base64url')}`, issuer, issuedAt: now, expiresAt: now + lifetimeSeconds * 1000 };
    this.tokens.set(issued.token, issued);
    return issued;
  }

  revoke(token: string): void {
    this.revoked.add(token);
  }

  get issued(): IssuedToken[] {
    return [...this.tokens.values()];
  }

  /** What Google would say of an `Authorization` header. */
  verdict(authorization: string | undefined): { verdict: TokenVerdict; token?: string } {
    const match = authorization === undefined ? null : /^Bearer (\S+)$/.exec(authorization);
    if (match === null) return { verdict: 'anonymous' };
    const token = match[1]!;
    const issued = this.tokens.get(token);
    if (issued === undefined) return { verdict: 'unknown', token };
    if (this.revoked.has(token)) return { verdict: 'revoked', token };
    if (Date.now() >= issued.expiresAt) return { verdict: 'expired', token };
    return { verdict: 'valid', token };
  }
}
