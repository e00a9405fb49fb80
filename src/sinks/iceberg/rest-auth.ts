import { z } from 'zod';
import { TilehouseError } from '../../errors.js';
import { excerpt, registerSecret } from '../../secret-scrubber.js';
import { IcebergCatalogError } from './iceberg-errors.js';

/**
 * How tilehouse proves itself to an Iceberg REST catalog: a bearer token given as is (Unity's
 * personal access token, a token obtained elsewhere), or OAuth2 client credentials, as Apache
 * Polaris and Snowflake Open Catalog take them: the REST specification's token endpoint
 * (`POST {uri}/v1/oauth/tokens`, or the `oauth2-server-uri` of pyiceberg and Java's client for an
 * external identity provider), form-encoded `grant_type=client_credentials`, `client_id`,
 * `client_secret` and `scope` (`PRINCIPAL_ROLE:ALL` by default: Polaris's all roles of the
 * principal; pyiceberg and Java's client default to `catalog`). The answer's `access_token` is
 * sent as `Authorization: Bearer` until shortly before its `expires_in` ends, then a new one is
 * asked for; a catalog that answers 401 meanwhile (a revoked token) gets one more request with a
 * fresh token. The secret and every token are registered with the scrubber, so no log line or
 * error carries them; a refusal names the catalog's URI.
 */
export type RestCatalogAuth =
  | { type: 'bearer'; token: string }
  | {
      type: 'oauth2';
      clientId: string;
      clientSecret: string;
      /** Default `PRINCIPAL_ROLE:ALL`. */
      scope?: string;
      /** The token endpoint; default `{uri}/v1/oauth/tokens`. */
      serverUri?: string;
    };

export const DEFAULT_OAUTH2_SCOPE = 'PRINCIPAL_ROLE:ALL';

/** The catalog or its token endpoint refused the credentials (`iceberg_catalog_auth_failed`). */
export class IcebergCatalogAuthError extends TilehouseError {
  readonly code = 'iceberg_catalog_auth_failed';

  constructor(
    /** The catalog's URI. */
    readonly catalog: string,
    readonly what: string,
    readonly status?: number,
  ) {
    super(`Iceberg REST catalog ${catalog}: ${what}`);
  }
}

const tokenAnswerSchema = z.looseObject({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.coerce.number().positive().optional(),
});
const oauthErrorSchema = z.looseObject({ error: z.string(), error_description: z.string().optional() });

// A token is replaced this long before it expires (a tenth of its life when that is shorter), so a
// request never leaves with one that dies on the way.
const REFRESH_MARGIN_MS = 60_000;

/** One catalog's credentials: the header each request carries, a token asked for when there is none or it is about to expire. */
export class RestAuthorization {
  private token: { value: string; refreshAt: number } | undefined;
  /** The token request under way: requests that need a token meanwhile wait for this one. */
  private obtaining: Promise<{ value: string; refreshAt: number }> | undefined;
  /** Tokens obtained (for the tests and the summary). */
  tokensObtained = 0;

  constructor(
    private readonly catalog: string,
    private readonly auth: RestCatalogAuth | undefined,
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {
    if (auth?.type === 'bearer') registerSecret(auth.token, { permanent: true });
    if (auth?.type === 'oauth2') registerSecret(auth.clientSecret, { permanent: true });
  }

  /** Whether a refused request is worth one more try with a new token (only a token this client obtained can be renewed). */
  get renewable(): boolean {
    return this.auth?.type === 'oauth2';
  }

  /** Forgets the token: the next header asks for a new one. */
  invalidate(): void {
    this.token = undefined;
  }

  async header(): Promise<string | undefined> {
    if (this.auth === undefined) return undefined;
    if (this.auth.type === 'bearer') return `Bearer ${this.auth.token}`;
    if (this.token === undefined || this.now() >= this.token.refreshAt) {
      this.obtaining ??= this.obtain(this.auth).finally(() => {
        this.obtaining = undefined;
      });
      this.token = await this.obtaining;
    }
    return `Bearer ${this.token.value}`;
  }

  private async obtain(auth: Extract<RestCatalogAuth, { type: 'oauth2' }>): Promise<{ value: string; refreshAt: number }> {
    const endpoint = auth.serverUri ?? `${this.catalog}/v1/oauth/tokens`;
    const form = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: auth.clientId,
      client_secret: auth.clientSecret,
      scope: auth.scope ?? DEFAULT_OAUTH2_SCOPE,
    });
    let response: Response;
    try {
      response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: form.toString(),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new IcebergCatalogError(this.catalog, `the OAuth2 token request to ${endpoint} failed: ${(error as Error).message}`, undefined, { cause: error });
    }
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (response.status >= 500)
      throw new IcebergCatalogError(this.catalog, `the OAuth2 token endpoint ${endpoint} answered ${response.status}: ${excerpt(text, 300)}`, response.status);
    if (response.status !== 200) {
      const refusal = oauthErrorSchema.safeParse(body);
      const detail = refusal.success
        ? `${refusal.data.error}${refusal.data.error_description ? `: ${refusal.data.error_description}` : ''}`
        : excerpt(text, 300);
      throw new IcebergCatalogAuthError(
        this.catalog,
        `the OAuth2 token endpoint ${endpoint} refused client ${JSON.stringify(auth.clientId)} (${response.status} ${detail}); check the client id and secret, and the scope ${JSON.stringify(auth.scope ?? DEFAULT_OAUTH2_SCOPE)}`,
        response.status,
      );
    }
    const answer = tokenAnswerSchema.safeParse(body);
    if (!answer.success) throw new IcebergCatalogAuthError(this.catalog, `the OAuth2 token endpoint ${endpoint} answered 200 without an access_token`, 200);
    registerSecret(answer.data.access_token);
    this.tokensObtained += 1;
    const lifetimeMs = answer.data.expires_in === undefined ? Number.POSITIVE_INFINITY : answer.data.expires_in * 1000;
    return { value: answer.data.access_token, refreshAt: this.now() + lifetimeMs - Math.min(REFRESH_MARGIN_MS, lifetimeMs / 10) };
  }
}
