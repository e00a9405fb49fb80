import { randomBytes } from 'node:crypto';

interface IssuedToken {
  audience: string;
  /** Wall-clock epoch ms: token lifetimes run on the real clock, not the dataset's fixed "now". */
  expiresAt: number;
  revoked: boolean;
}

export type TokenCheck = 'valid' | 'unknown' | 'expired' | 'wrong-audience';

/** Opaque random bearer tokens, each bound to the audience it was issued for. */
export class TokenStore {
  private readonly tokens = new Map<string, IssuedToken>();
  /** Every token ever issued, so tests can prove a token never leaks into logs or files. */
  readonly issued: string[] = [];

  constructor(private readonly clock: () => number = Date.now) {}

  issue(audience: string, lifetimeSeconds: number): string {
    this.forgetExpired();
    const token = randomBytes(32).toString('base64url');
    this.tokens.set(token, { audience, expiresAt: this.clock() + lifetimeSeconds * 1000, revoked: false });
    this.issued.push(token);
    return token;
  }

  check(token: string, audience: string): TokenCheck {
    const issued = this.tokens.get(token);
    if (!issued) return 'unknown';
    if (issued.revoked || this.clock() >= issued.expiresAt) return 'expired';
    if (issued.audience !== audience) return 'wrong-audience';
    return 'valid';
  }

  /** Ends a token before its time (fault injection); it then answers as expired. */
  expire(token: string): void {
    const issued = this.tokens.get(token);
    if (issued) issued.revoked = true;
  }

  // Keeps a long benchmark from accumulating tokens; an expired token still reads as 'expired'
  // for an hour, so a client sees "expired" rather than "unknown" for a recently dead token.
  private forgetExpired(): void {
    const horizon = this.clock() - 3_600_000;
    for (const [token, issued] of this.tokens) if (issued.expiresAt < horizon) this.tokens.delete(token);
  }
}
