import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AuthClient, GoogleAuth } from 'google-auth-library';
import { messageOf } from '../../errors.js';
import type { Logger } from '../../log.js';
import { excerpt, registerSecret, scrubSecrets } from '../../secret-scrubber.js';
import { GoogleCredentialsRejectedError, GoogleCredentialsUnavailableError, googleCredentialsFailureIn } from './credential-errors.js';

/**
 * The one Google identity of a process: Application Default Credentials (a key file named by
 * `GOOGLE_APPLICATION_CREDENTIALS`, gcloud's application default credentials, which may impersonate
 * a service account, or the metadata server, which is Workload Identity on GKE), shared by every
 * BigQuery and Cloud Storage client of the run, so both sinks fetch and refresh one token.
 *
 * google-auth-library does the protocol; what it leaves to its caller is kept here:
 *
 * - a bounded wait at start-up (`googleCredentialsWaitMs`, 30 s by default). GKE's metadata server
 *   can take a few seconds to answer in a new pod; the library gives up at once (a refused
 *   connection at its first probe is remembered for the process as "not on GCP", and a token
 *   request that meets 5xx fails after its own short retries). Every token this process asks for
 *   goes through the same loop, so a refresh during a long run rides out the same hiccup;
 * - the failures as two stable codes (credential-errors.ts) instead of library messages, one of
 *   which ("Could not load the default credentials") makes the client libraries send the request
 *   without credentials;
 * - a token Google answered 401 to is dropped (`invalidate`), so the caller's one retry carries
 *   a fresh one;
 * - the identity `check` prints, and the preflight's 403 messages name.
 */

export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const DEFAULT_CREDENTIALS_WAIT_MS = 30_000;
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 2_000;
const EXHAUSTED_TRY_MS = 3_000;

/** What the client libraries ask of an `authClient` (GoogleAuth wraps it and asks only this). */
export interface LibraryAuthClient {
  universeDomain: string;
  getRequestHeaders(url?: string): Promise<Headers>;
  getAccessToken(): Promise<{ token?: string | null }>;
}

export interface GoogleCredentialsOptions {
  /** How long one token may be waited for, retrying transient failures. */
  waitMs?: number;
  env?: NodeJS.ProcessEnv;
  logger?: Logger;
}

type Verdict = 'transient' | 'rejected' | 'unavailable';

class AttemptTimedOut extends Error {}

export class GoogleCredentials {
  readonly waitMs: number;
  private readonly env: NodeJS.ProcessEnv;
  private auth: GoogleAuth | undefined;
  private client: Promise<AuthClient> | undefined;
  private email: Promise<string | undefined> | undefined;
  private logger: Logger | undefined;
  /** The last token handed out (registered with the secret scrubber once). */
  private lastToken: string | undefined;
  /**
   * When a wait last ran out: requests within `waitMs` after it (the run ledger's record of the
   * failed tile, the next job) try once instead of waiting again, so a run waits for credentials
   * about `waitMs`, not once per request; the `schedule` worker's next tick, later, waits again.
   */
  private exhaustedAt: number | undefined;

  private get exhausted(): boolean {
    return this.exhaustedAt !== undefined && Date.now() - this.exhaustedAt < this.waitMs;
  }

  /** The object handed to the client libraries as their `authClient`. */
  readonly libraryClient: LibraryAuthClient;

  constructor(options: GoogleCredentialsOptions = {}) {
    this.waitMs = options.waitMs ?? DEFAULT_CREDENTIALS_WAIT_MS;
    this.env = options.env ?? process.env;
    this.logger = options.logger;
    this.libraryClient = {
      universeDomain: 'googleapis.com',
      getRequestHeaders: (url?: string) => this.requestHeaders(url),
      getAccessToken: async () => ({ token: this.bearerOf(await this.requestHeaders()) }),
    };
  }

  /** Where a later warning goes (the first sink that has a logger lends it). */
  useLogger(logger: Logger): void {
    this.logger ??= logger;
  }

  /** Where the credentials come from, for messages: never a secret. */
  describeSource(): string {
    const file = this.env.GOOGLE_APPLICATION_CREDENTIALS?.trim();
    if (file) return `the credentials file ${file} (GOOGLE_APPLICATION_CREDENTIALS)`;
    const host = this.env.GCE_METADATA_HOST?.trim() || this.env.GCE_METADATA_IP?.trim();
    return `Application Default Credentials (gcloud's application default credentials, else the metadata server${host ? ` at ${host}` : ''}: Workload Identity on GKE)`;
  }

  /**
   * The headers of one request: `Authorization: Bearer <token>` (and a quota project when the
   * credentials name one), waiting at most `waitMs` for a token.
   */
  async requestHeaders(url?: string): Promise<Headers> {
    return this.withinWait(async () => {
      const client = await this.resolvedClient();
      const headers = new Headers(await client.getRequestHeaders(url));
      const token = this.bearerOf(headers);
      if (token === undefined) throw new GoogleCredentialsUnavailableError(`${this.describeSource()} gave no access token`);
      if (token !== this.lastToken) registerSecret(token);
      this.lastToken = token;
      return headers;
    });
  }

  /**
   * Drops the token Google refused (401) so the next request fetches a fresh one. The library
   * would otherwise keep it until a few minutes before its stated expiry.
   */
  invalidate(): void {
    const client = this.client;
    if (client === undefined) return;
    void client.then(
      (resolved) => {
        const holder = resolved as unknown as { credentials?: Record<string, unknown> };
        if (holder.credentials !== undefined) holder.credentials = { ...holder.credentials, expiry_date: 1 };
      },
      () => undefined,
    );
  }

  /** Whether `invalidate` has something to drop (credentials were had). */
  get active(): boolean {
    return this.client !== undefined;
  }

  /**
   * The service account this process runs as: from the key file, the impersonation target, or the
   * metadata server's `service-accounts/default/email`; undefined when the credentials do not say
   * (a user's own gcloud login). Asked once, after a token was had.
   */
  identity(): Promise<string | undefined> {
    this.email ??= (async () => {
      await this.requestHeaders();
      try {
        const credentials = await this.auth!.getCredentials();
        return typeof credentials.client_email === 'string' && credentials.client_email !== '' ? credentials.client_email : undefined;
      } catch {
        return undefined;
      }
    })();
    return this.email;
  }

  /** The identity for a message: `service account x@p.iam.gserviceaccount.com` or what is known. */
  async principal(): Promise<string> {
    try {
      const email = await this.identity();
      return email === undefined ? `the identity of ${this.describeSource()}` : `service account ${email}`;
    } catch {
      return `the identity of ${this.describeSource()}`;
    }
  }

  private bearerOf(headers: Headers): string | undefined {
    const value = headers.get('authorization');
    const match = value === null ? null : /^Bearer\s+(.+)$/i.exec(value);
    return match?.[1];
  }

  private resolvedClient(): Promise<AuthClient> {
    this.client ??= (async () => {
      const { GoogleAuth } = await import('google-auth-library');
      const transporter = await keyFileTokenUriTransporter(this.env);
      this.auth = new GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE], ...(transporter === undefined ? {} : { clientOptions: { transporter } }) });
      return this.auth.getClient();
    })();
    return this.client;
  }

  /**
   * Forgets a client whose detection or token failed transiently, and the metadata server's
   * "not available" the library remembers for the whole process (gcp-metadata's isAvailable
   * cache): the next try detects again.
   */
  private async forgetClient(): Promise<void> {
    this.client = undefined;
    this.auth = undefined;
    this.email = undefined;
    const { gcpMetadata } = await import('google-auth-library');
    gcpMetadata.resetIsAvailableCache();
  }

  /** Runs `attempt`, trying again after transient failures until `waitMs` has passed since the first try. */
  private async withinWait<T>(attempt: () => Promise<T>): Promise<T> {
    const started = Date.now();
    const deadline = this.exhausted ? started : started + this.waitMs;
    let delay = FIRST_DELAY_MS;
    let tries = 0;
    for (;;) {
      tries += 1;
      try {
        // One try after an exhausted wait still gets a little time to answer.
        const result = await beforeDeadline(attempt(), Math.max(deadline, Date.now() + (this.exhausted ? EXHAUSTED_TRY_MS : 0)));
        this.exhaustedAt = undefined;
        return result;
      } catch (error) {
        const own = googleCredentialsFailureIn(error);
        if (own !== undefined) throw own;
        const verdict = this.classify(error);
        if (verdict === 'rejected') {
          throw new GoogleCredentialsRejectedError(
            `Google refused ${this.describeSource()}: ${describeFailure(error)}; the identity is not valid (a deleted key or service account, a Workload Identity binding that is missing)`,
            { cause: error },
          );
        }
        if (verdict === 'unavailable') {
          throw new GoogleCredentialsUnavailableError(`no Google credentials from ${this.describeSource()}: ${describeFailure(error)}`, { cause: error });
        }
        await this.forgetClient();
        const now = Date.now();
        if (now + delay >= deadline) {
          this.exhaustedAt = Date.now();
          throw new GoogleCredentialsUnavailableError(
            `no Google credentials from ${this.describeSource()} within ${this.waitMs} ms (googleCredentialsWaitMs; ${tries} ${tries === 1 ? 'try' : 'tries'}): ${describeFailure(error)}`,
            { cause: error },
          );
        }
        if (tries === 1)
          this.logger?.warn(
            { reason: describeFailure(error), waitMs: this.waitMs },
            `Google credentials not available yet from ${this.describeSource()}; retrying for up to ${this.waitMs} ms`,
          );
        await sleep(delay);
        delay = Math.min(delay * 2, MAX_DELAY_MS);
      }
    }
  }

  /** Whether another try may succeed; a failure that will not change is reported at once. */
  private classify(error: unknown): Verdict {
    if (error instanceof AttemptTimedOut) return 'transient';
    const message = messageOf(error);
    if (/Could not load the default credentials/i.test(message)) {
      // The library found nothing. Where a metadata server is expected (GCP, or one named), it may
      // still be starting: the pod's first seconds. Elsewhere nothing will appear by waiting.
      return this.metadataServerExpected() ? 'transient' : 'unavailable';
    }
    const status = statusOf(error);
    if (status !== undefined) {
      if (status === 408 || status === 429 || status >= 500) return 'transient';
      if (status >= 400) return 'rejected';
    }
    const codes = errorCodes(error);
    if (codes.some((code) => TRANSIENT_CODES.has(code) || code.startsWith('UND_ERR'))) return 'transient';
    return 'unavailable';
  }

  private metadataServerExpected(): boolean {
    if (this.env.GOOGLE_APPLICATION_CREDENTIALS?.trim()) return false;
    if (this.env.GCE_METADATA_HOST?.trim() || this.env.GCE_METADATA_IP?.trim()) return true;
    if (this.env.METADATA_SERVER_DETECTION?.trim().toLowerCase() === 'assume-present') return true;
    return onGoogleCloud();
  }
}

const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/**
 * A service-account key file's `token_uri`, honoured. google-auth-library 11 sends every JWT
 * grant to Google's token endpoint whatever the file says, while the key files of other universes
 * and of private token services name their own (the Go and Python libraries honour the field): the
 * token request is re-aimed there. Only a file whose `token_uri` differs gets a transporter of its
 * own; an https endpoint, or http on loopback, as for every other endpoint tilehouse sends credentials to.
 */
async function keyFileTokenUriTransporter(env: NodeJS.ProcessEnv): Promise<InstanceType<typeof import('google-auth-library')['gaxios']['Gaxios']> | undefined> {
  const file = env.GOOGLE_APPLICATION_CREDENTIALS?.trim();
  if (!file) return undefined;
  let tokenUri: unknown;
  let type: unknown;
  try {
    ({ token_uri: tokenUri, type } = JSON.parse(readFileSync(file, 'utf8')) as { token_uri?: unknown; type?: unknown });
  } catch {
    return undefined; // the library reads the file next and names what is wrong with it
  }
  if (type !== 'service_account' || typeof tokenUri !== 'string' || tokenUri === GOOGLE_TOKEN_URL) return undefined;
  const target = new URL(tokenUri);
  if (target.protocol !== 'https:' && !(target.protocol === 'http:' && /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(target.hostname))) {
    throw new GoogleCredentialsUnavailableError(
      `the credentials file ${file} names token_uri ${tokenUri}: only https:// (or http:// on loopback) may receive a signed assertion`,
    );
  }
  const { gaxios } = await import('google-auth-library');
  const transporter = new gaxios.Gaxios();
  transporter.interceptors.request.add({
    resolved: async (config) => {
      if (String(config.url) === GOOGLE_TOKEN_URL) config.url = new URL(target.href);
      return config;
    },
  });
  return transporter;
}

const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'AbortError',
  'TimeoutError',
]);

/** Whether this machine says it is a Google Cloud VM (GKE nodes are): its BIOS, as the library reads it. */
function onGoogleCloud(): boolean {
  try {
    // Synchronous and cheap: a file read under /sys (google-auth-library's own residency test).
    return /Google/.test(readFileSync('/sys/class/dmi/id/bios_vendor', 'utf8')) || /Google/.test(readFileSync('/sys/class/dmi/id/product_name', 'utf8'));
  } catch {
    return false;
  }
}

function statusOf(error: unknown): number | undefined {
  const candidate = error as { status?: unknown; response?: { status?: unknown } } | null;
  for (const value of [candidate?.status, candidate?.response?.status]) if (typeof value === 'number') return value;
  return undefined;
}

/** Network codes anywhere in an error: gaxios nests them in `cause`, Promise.any in `errors`. */
function errorCodes(error: unknown, depth = 0): string[] {
  if (typeof error !== 'object' || error === null || depth > 6) return [];
  const record = error as { code?: unknown; name?: unknown; type?: unknown; cause?: unknown; errors?: unknown };
  const own = [record.code, record.name, record.type === 'request-timeout' ? 'ETIMEDOUT' : undefined].filter(
    (value): value is string => typeof value === 'string',
  );
  const nested = Array.isArray(record.errors) ? record.errors.flatMap((inner) => errorCodes(inner, depth + 1)) : [];
  return [...own, ...nested, ...errorCodes(record.cause, depth + 1)];
}

/** A library failure for a message: its text, with the phrase the client libraries act on replaced. */
function describeFailure(error: unknown): string {
  if (error instanceof AttemptTimedOut) return error.message;
  const syntax = jsonSyntaxErrorIn(error);
  if (syntax !== undefined) {
    // Node's JSON.parse quotes the text around where it stopped (`..."ate_key": MIIEvQ"...`): in a
    // key file that is the private key. Told by its place alone, as config mistakes are (issue 61).
    const place = /\(line \d+ column \d+\)/.exec(syntax.message)?.[0];
    return `the file is not valid JSON${place === undefined ? '' : ` ${place}`}`;
  }
  const status = statusOf(error);
  const codes = errorCodes(error).filter((code) => /^[A-Z_]+$/.test(code));
  // Scrubbed before the first line is taken: a secret spread over lines is whole only here.
  const text = excerpt(
    scrubSecrets(messageOf(error))
      // @google-cloud/common sends a request WITHOUT credentials when an auth error says this.
      .replace(/Could not load the default credentials[^.]*\.?/gi, 'no Application Default Credentials were found.')
      .split('\n')[0]!,
    300,
  );
  return [text, status === undefined ? undefined : `HTTP ${status}`, codes.length > 0 ? codes[0] : undefined].filter(Boolean).join(' ');
}

/** A JSON parser's error in `error` or its causes (google-auth-library wraps the key file's). */
function jsonSyntaxErrorIn(error: unknown): SyntaxError | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1)
    if (current instanceof SyntaxError) return current;
  return undefined;
}

/** The attempt, or a rejection when the deadline passes first (the library's requests take no signal, and on GCP no timeout). */
async function beforeDeadline<T>(attempt: Promise<T>, deadline: number): Promise<T> {
  attempt.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AttemptTimedOut('no answer before the wait ended')), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

let shared: { key: string; credentials: GoogleCredentials } | undefined;

/**
 * The process's credentials (one token for every Google client of the run). The environment's
 * variables are part of the key only so that tests that change them in one process get fresh ones.
 */
export function sharedGoogleCredentials(options: { waitMs?: number; logger?: Logger } = {}, env: NodeJS.ProcessEnv = process.env): GoogleCredentials {
  const key = JSON.stringify([options.waitMs ?? DEFAULT_CREDENTIALS_WAIT_MS, env.GOOGLE_APPLICATION_CREDENTIALS, env.GCE_METADATA_HOST, env.GCE_METADATA_IP]);
  if (shared?.key !== key) shared = { key, credentials: new GoogleCredentials({ ...options, env }) };
  else if (options.logger) shared.credentials.useLogger(options.logger);
  return shared.credentials;
}

/** The process's credentials when a client uses them (undefined with the emulators: nothing to refresh). */
export function activeGoogleCredentials(): GoogleCredentials | undefined {
  return shared?.credentials.active === true ? shared.credentials : undefined;
}

/** An HTTP 401 from BigQuery or Cloud Storage (a client ApiError, a gaxios error, our own GcsHttpError). */
export function isUnauthorized(error: unknown): boolean {
  const candidate = error as { code?: unknown; status?: unknown; response?: { status?: unknown } } | null;
  return [candidate?.code, candidate?.status, candidate?.response?.status].some((value) => value === 401);
}

/**
 * The rule for a 401 on a request that carried a token: the token is dropped and the request
 * tried once more with a fresh one; a second 401 is the identity's problem, not the request's.
 * For callers with a retry loop: `retry` says whether to try again, `error` what to throw instead.
 */
export function unauthorizedVerdict(error: unknown, alreadyRefreshed: boolean, what: string): { retry: true } | { retry: false; error: unknown } | undefined {
  if (!isUnauthorized(error)) return undefined;
  const credentials = activeGoogleCredentials();
  if (credentials === undefined) return undefined;
  if (!alreadyRefreshed) {
    credentials.invalidate();
    return { retry: true };
  }
  return {
    retry: false,
    error: new GoogleCredentialsRejectedError(
      `${what}: Google answered 401 (unauthenticated) twice, the second time with a fresh token from ${credentials.describeSource()}: ${describeFailure(error)}`,
      { cause: error },
    ),
  };
}

/** A call without a retry loop of its own (a client library's read), under the 401 rule. */
export async function withFreshTokenOn401<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const first = unauthorizedVerdict(error, false, what);
    if (first === undefined || !first.retry) throw error;
    try {
      return await call();
    } catch (again) {
      const second = unauthorizedVerdict(again, true, what);
      throw second !== undefined && !second.retry ? second.error : again;
    }
  }
}

/**
 * What `check` says of the identity a Google sink ran its check as: ` (as service account x@p.iam.gserviceaccount.com)`,
 * or nothing when no credentials were used (an emulator).
 */
export async function runsAsNote(): Promise<string> {
  const credentials = activeGoogleCredentials();
  return credentials === undefined ? '' : ` (as ${await credentials.principal()})`;
}

/** Lends the process's credentials a logger for their waiting warning (the first caller's wins); nothing without them. */
export function lendLoggerToGoogleCredentials(logger: Logger): void {
  shared?.credentials.useLogger(logger);
}
