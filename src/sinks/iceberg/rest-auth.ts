import { z } from 'zod';
import { TilehouseError } from '../../errors.js';
import { excerpt, registerSecret } from '../../secret-scrubber.js';
import { type AwsRefusalCode, awsRefusalOf } from '../aws/aws-refusal.js';
import type { SigV4Signer } from '../aws/sigv4-signer.js';
import { googleCredentialsFailureIn } from '../google/credential-errors.js';
import { type GoogleCredentials, sharedGoogleCredentials } from '../google/google-credentials.js';
import { IcebergCatalogError } from './iceberg-errors.js';

/**
 * How tilehouse proves itself to an Iceberg REST catalog:
 *
 * - a bearer token given as is (Unity's personal access token, a token obtained elsewhere);
 * - OAuth2 client credentials, as Apache Polaris and Snowflake Open Catalog take them: the REST
 *   specification's token endpoint (`POST {uri}/v1/oauth/tokens`, or the `oauth2-server-uri` of
 *   pyiceberg and Java's client for an external identity provider), form-encoded
 *   `grant_type=client_credentials`, `client_id`, `client_secret` and `scope`
 *   (`PRINCIPAL_ROLE:ALL` by default: Polaris's all roles of the principal; pyiceberg and Java's
 *   client default to `catalog`). The answer's `access_token` is sent as `Authorization: Bearer`
 *   until shortly before its `expires_in` ends, then a new one is asked for;
 * - AWS Signature Version 4 (`sigv4`: AWS Glue's and Amazon S3 Tables' endpoints): each request
 *   signed with the AWS credential chain (src/sinks/aws/sigv4-signer.ts, loaded only for such a
 *   catalog); a refusal of the signature told by its cause (aws-refusal.ts: a wrong secret key, a
 *   clock more than 5 minutes off, an expired session token), each with a code of its own;
 * - Google Application Default Credentials (`google`: BigLake metastore): the process's Google
 *   identity (src/sinks/google/google-credentials.ts, the BigQuery sink's, Workload Identity
 *   included) as `Authorization: Bearer`, renewed by google-auth-library before it expires, with
 *   `x-goog-user-project` when a project is named (BigLake bills and checks quota there).
 *
 * A catalog that answers 401 to a token this client obtained (a revoked token) gets one more
 * request with a fresh token. Every secret and token is registered with the scrubber, so no log
 * line or error carries them; a refusal names the catalog's URI.
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
    }
  | { type: 'sigv4'; signingName: string; signingRegion: string }
  | {
      type: 'google';
      /** Sent as `x-goog-user-project`; default: the credentials' quota project, if any. */
      userProject?: string;
      /** `googleCredentialsWaitMs` of the environment. */
      credentialsWaitMs?: number;
    };

export const DEFAULT_OAUTH2_SCOPE = 'PRINCIPAL_ROLE:ALL';

export type CatalogAuthCode = 'iceberg_catalog_auth_failed' | 'aws_credentials_unavailable' | AwsRefusalCode;

/** The catalog or its token endpoint refused the credentials (`iceberg_catalog_auth_failed`, or an `aws_*` code for a refused signature). */
export class IcebergCatalogAuthError extends TilehouseError {
  readonly code: CatalogAuthCode;

  constructor(
    /** The catalog's URI. */
    readonly catalog: string,
    readonly what: string,
    readonly status?: number,
    code: CatalogAuthCode = 'iceberg_catalog_auth_failed',
  ) {
    super(`Iceberg REST catalog ${catalog}: ${what}`);
    this.code = code;
  }
}

/** Whether a request failed before it left (its credentials could not be had): no commit was sent. */
export function failedBeforeSending(error: unknown): boolean {
  return error instanceof IcebergCatalogAuthError || googleCredentialsFailureIn(error) !== undefined;
}

/** A request about to be sent, as a signature covers it. */
export interface OutgoingRequest {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
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

/** One catalog's credentials: the headers each request carries, a token asked for when there is none or it is about to expire. */
export class RestAuthorization {
  private token: { value: string; refreshAt: number } | undefined;
  /** The token request under way: requests that need a token meanwhile wait for this one. */
  private obtaining: Promise<{ value: string; refreshAt: number }> | undefined;
  /** The signer of a `sigv4` catalog, loaded with the AWS SDK on the first request. */
  private signer: Promise<SigV4Signer> | undefined;
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

  /** Whether requests carry credentials. */
  get authenticated(): boolean {
    return this.auth !== undefined;
  }

  /** Whether a refused request is worth one more try with a new token (only a token this client obtained can be renewed). */
  get renewable(): boolean {
    return this.auth?.type === 'oauth2' || this.auth?.type === 'google';
  }

  /** Forgets the token: the next header asks for a new one. */
  invalidate(): void {
    this.token = undefined;
    if (this.auth?.type === 'google') this.google(this.auth).invalidate();
  }

  /** The headers that authenticate `request` (none without credentials). */
  async headers(request: OutgoingRequest): Promise<Record<string, string>> {
    const auth = this.auth;
    if (auth === undefined) return {};
    if (auth.type === 'bearer') return { authorization: `Bearer ${auth.token}` };
    if (auth.type === 'sigv4') return this.signed(auth, request);
    if (auth.type === 'google') {
      const given = await this.google(auth).requestHeaders();
      const project = auth.userProject ?? given.get('x-goog-user-project') ?? undefined;
      return { authorization: given.get('authorization')!, ...(project === undefined ? {} : { 'x-goog-user-project': project }) };
    }
    if (this.token === undefined || this.now() >= this.token.refreshAt) {
      this.obtaining ??= this.obtain(auth).finally(() => {
        this.obtaining = undefined;
      });
      this.token = await this.obtaining;
    }
    return { authorization: `Bearer ${this.token.value}` };
  }

  /**
   * What a 401 or 403 to an authenticated request means, when the credentials say more than the
   * status: an AWS refusal of the signature, by its cause. Undefined: the status says it all.
   */
  async refusal(method: string, path: string, status: number, headers: Headers, text: string): Promise<IcebergCatalogAuthError | undefined> {
    if (this.auth?.type !== 'sigv4' || this.signer === undefined) return undefined;
    const signer = await this.signer;
    const { code, type, message } = awsRefusalOf(headers, text);
    if (code === undefined) return undefined;
    const key = signer.accessKey ?? 'the access key';
    const { service, region } = signer.scope;
    const said = `${status}${type === undefined ? '' : ` ${type}`}${message === undefined ? '' : `: ${message}`}`;
    const cause =
      code === 'aws_signature_mismatch'
        ? `AWS computed another signature: the secret access key is not the one of access key ${key}, or the signing name ${service} or region ${region} is not the catalog's`
        : code === 'aws_credentials_expired'
          ? `the session token of access key ${key} has expired: renew the temporary credentials (AWS_SESSION_TOKEN, the role's session)`
          : `this machine's clock (${new Date(this.now()).toISOString()}) is more than 5 minutes from the catalog's${clockGap(headers.get('date'), this.now())}: sync it (NTP)`;
    return new IcebergCatalogAuthError(this.catalog, `${method} ${path} was refused (${said}): ${cause}; signed as ${key}/${region}/${service}`, status, code);
  }

  /** How requests are authenticated, for `check`: who signs or whose tokens go, never a secret; undefined without credentials. */
  async describe(): Promise<string> {
    const auth = this.auth;
    if (auth === undefined) return 'requests carry no credentials';
    if (auth.type === 'bearer') return 'requests carry the bearer token';
    if (auth.type === 'oauth2') return `requests carry tokens of OAuth2 client ${JSON.stringify(auth.clientId)}`;
    if (auth.type === 'sigv4') return `signs requests as ${await (await this.sigV4Signer(auth)).principal()} (AWS SigV4)`;
    const project = auth.userProject === undefined ? '' : `, billed to project ${auth.userProject}`;
    return `requests carry Google tokens of ${await this.google(auth).principal()}${project}`;
  }

  private google(auth: Extract<RestCatalogAuth, { type: 'google' }>): GoogleCredentials {
    return sharedGoogleCredentials(auth.credentialsWaitMs === undefined ? {} : { waitMs: auth.credentialsWaitMs });
  }

  private sigV4Signer(auth: Extract<RestCatalogAuth, { type: 'sigv4' }>): Promise<SigV4Signer> {
    this.signer ??= import('../aws/sigv4-signer.js').then(
      ({ SigV4Signer }) => new SigV4Signer({ service: auth.signingName, region: auth.signingRegion }, this.now),
    );
    return this.signer;
  }

  private async signed(auth: Extract<RestCatalogAuth, { type: 'sigv4' }>, request: OutgoingRequest): Promise<Record<string, string>> {
    const signer = await this.sigV4Signer(auth);
    try {
      return await signer.sign(request);
    } catch (error) {
      const { AwsCredentialsUnavailable } = await import('../aws/sigv4-signer.js');
      if (!(error instanceof AwsCredentialsUnavailable)) throw error;
      throw new IcebergCatalogAuthError(
        this.catalog,
        `no AWS credentials to sign requests with (${error.message}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the pod's IAM role (IRSA)`,
        undefined,
        'aws_credentials_unavailable',
      );
    }
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

/** `, 612 s behind` from the answer's Date header, when it has one. */
function clockGap(date: string | null, now: number): string {
  const theirs = date === null ? Number.NaN : Date.parse(date);
  if (Number.isNaN(theirs)) return '';
  const seconds = Math.round((now - theirs) / 1000);
  return ` (its answer's Date: ${new Date(theirs).toISOString()}, this clock ${Math.abs(seconds)} s ${seconds < 0 ? 'behind' : 'ahead'})`;
}
