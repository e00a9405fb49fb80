import type { Token } from './token-client.js';

/**
 * The bearer token of one run. The spec asks for a fresh token per run (no caching across runs);
 * within a run a 401 triggers a refresh, shared by every request that saw the same stale token
 * so parallel pages do not stampede the issuer.
 */
export class SessionToken {
  private current: Promise<string> | undefined;
  private fetches = 0;

  constructor(private readonly fetch: () => Promise<Token>) {}

  get(): Promise<string> {
    this.current ??= this.load();
    return this.current;
  }

  /** Fetches a new token unless another caller already replaced `stale`. */
  async refresh(stale: string): Promise<string> {
    const current = await this.get();
    if (current !== stale) return current;
    this.current = this.load();
    return this.current;
  }

  /** Tokens fetched so far (1 + re-authentications). */
  get fetched(): number {
    return this.fetches;
  }

  private load(): Promise<string> {
    this.fetches += 1;
    const pending = this.fetch().then((token) => token.accessToken);
    // A failed fetch must not be cached: the next caller tries again (and fails loudly itself).
    pending.catch(() => {
      if (this.current === pending) this.current = undefined;
    });
    return pending;
  }
}
