import type { Token } from './token-client.js';

/** A token as this process received it: when it was asked for and answered, and when to replace it. */
export interface IssuedToken extends Token {
  /** Epoch ms just before the request was sent (the issuer's lifetime starts no earlier). */
  requestedAt: number;
  /** Epoch ms when the answer was read. */
  receivedAt: number;
  /** Epoch ms from which `get` fetches a new token instead (Infinity: the issuer gave no expiry). */
  refreshAt: number;
}

export interface RunTokenOptions {
  now?: () => number;
}

/**
 * How long before its expiry a token is replaced: a minute, or a fifth of a short lifetime. The
 * margin covers the clock skew to the issuer and a request that is sent just before expiry but
 * checked by the API just after it (a page can queue behind its neighbours on the way in).
 */
export function refreshMarginMs(lifetimeMs: number): number {
  return Math.min(60_000, lifetimeMs / 5);
}

/**
 * The bearer token of one run, shared by its tiles (and by the windows of a backfill): the spec
 * asks for a fresh token per run (no caching across runs), and issuers of the Auth0 kind meter
 * machine-to-machine token issuance, so a token per tile multiplies the bill. Within the run a
 * token is replaced a margin before the `expires_in` it came with, and a 401 replaces it once,
 * shared by every request that saw the same stale token so parallel pages do not stampede the
 * issuer. Who fetches is the caller's business (`fetch`): the tile that first needs a token asks
 * on its own behalf, so a refused request names that tile and spends that tile's retry budget.
 */
export class RunToken {
  private current: Promise<IssuedToken> | undefined;
  private settled: IssuedToken | undefined;
  private fetches = 0;
  private readonly now: () => number;

  constructor(options: RunTokenOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** The current token, fetched with `fetch` when there is none or it is due for replacement. */
  async issued(fetch: () => Promise<Token>): Promise<IssuedToken> {
    if (this.current === undefined || (this.settled !== undefined && this.now() >= this.settled.refreshAt)) this.current = this.load(fetch);
    return this.current;
  }

  async get(fetch: () => Promise<Token>): Promise<string> {
    return (await this.issued(fetch)).accessToken;
  }

  /** Fetches a new token unless another caller already replaced `stale`. */
  async refresh(stale: string, fetch: () => Promise<Token>): Promise<string> {
    await this.issued(fetch);
    // Whoever gets here first with the stale token replaces it; the others, resumed in the same
    // tick, find the replacement already under way and wait for it.
    const latest = this.current!;
    const token = await latest;
    if (token.accessToken !== stale) return token.accessToken;
    if (this.current === latest) this.current = this.load(fetch);
    return (await this.current!).accessToken;
  }

  /** Tokens fetched so far by the whole run. */
  get fetched(): number {
    return this.fetches;
  }

  private load(fetch: () => Promise<Token>): Promise<IssuedToken> {
    this.fetches += 1;
    this.settled = undefined;
    const requestedAt = this.now();
    const pending = fetch().then((token): IssuedToken => {
      const lifetimeMs = token.expiresIn === undefined ? Number.POSITIVE_INFINITY : token.expiresIn * 1000;
      const issued = { ...token, requestedAt, receivedAt: this.now(), refreshAt: requestedAt + lifetimeMs - refreshMarginMs(lifetimeMs) };
      if (this.current === pending) this.settled = issued;
      return issued;
    });
    // A failed fetch must not be cached: the next caller tries again (and fails loudly itself).
    pending.catch(() => {
      if (this.current === pending) this.current = undefined;
    });
    return pending;
  }
}

/**
 * One tile's view of its run's token: what the export client asks for a bearer token. Counts the
 * fetches this tile caused, for its summary; without a shared RunToken it has one of its own.
 */
export class SessionToken {
  private fetches = 0;
  private readonly counted: () => Promise<Token>;

  constructor(
    fetch: () => Promise<Token>,
    private readonly run: RunToken = new RunToken(),
  ) {
    this.counted = () => {
      this.fetches += 1;
      return fetch();
    };
  }

  get(): Promise<string> {
    return this.run.get(this.counted);
  }

  /** The token with its timing (the issuer's `Date`, for the backfill's source clock). */
  issued(): Promise<IssuedToken> {
    return this.run.issued(this.counted);
  }

  refresh(stale: string): Promise<string> {
    return this.run.refresh(stale, this.counted);
  }

  /** Tokens this tile fetched (0 when it used one another tile of the run had fetched). */
  get fetched(): number {
    return this.fetches;
  }
}
