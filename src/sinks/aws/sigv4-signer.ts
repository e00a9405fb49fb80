// Static imports in a module only a `sigv4` catalog loads (rest-auth.ts imports it dynamically): the
// AWS SDK's pieces stay out of every other run, as the s3:// store keeps its client (s3-client.ts).
import { createHash, createHmac, type Hash, type Hmac } from 'node:crypto';
import { defaultProvider } from '@aws-sdk/credential-provider-node';
import { SignatureV4 } from '@smithy/signature-v4';
import { messageOf } from '../../errors.js';
import { excerpt, registerSecret } from '../../secret-scrubber.js';

/**
 * AWS Signature Version 4 for requests tilehouse sends itself (an Iceberg REST catalog's: AWS Glue,
 * Amazon S3 Tables), as pyiceberg's and Iceberg's Java client sign them.
 *
 * The credentials are the AWS SDK's default chain, the one `@aws-sdk/client-s3` resolves for the
 * s3:// store (s3-client.ts gives its client no credentials, so the SDK takes this same
 * `defaultProvider`): environment variables (with `AWS_SESSION_TOKEN`), SSO, web identity (IRSA:
 * `AWS_ROLE_ARN` + `AWS_WEB_IDENTITY_TOKEN_FILE`), the shared files and `AWS_PROFILE`, the
 * `credential_process`, the container and instance metadata. The chain keeps what it found and asks
 * again when temporary credentials have less than 5 minutes left, so a long run signs with fresh
 * ones. Every secret key and session token it hands out is registered with the scrubber before a
 * request is signed with it.
 *
 * The signer is `@smithy/signature-v4`, the SDK's own (path segments escaped twice, as every
 * service but S3 wants; the body's SHA-256 sent as `x-amz-content-sha256`), given Node's SHA-256.
 */
export interface SigV4Scope {
  /** The signing name: `glue`, `s3tables`. */
  service: string;
  region: string;
}

export interface RequestToSign {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

/** Credentials as the chain gives them (what the signer needs of them). */
interface ChainCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}

/** The chain found nothing, or a source of it failed (an STS or metadata request). */
export class AwsCredentialsUnavailable extends Error {}

/** SHA-256 and HMAC-SHA-256 through node:crypto, in the shape the signer asks for. */
class NodeSha256 {
  private readonly hash: Hash | Hmac;

  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(secret));
  }

  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(bytesOf(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

function bytesOf(data: string | ArrayBuffer | ArrayBufferView): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return Buffer.from(data);
}

export class SigV4Signer {
  private readonly chain = defaultProvider();
  private readonly signer: SignatureV4;
  /** The access key the last signature used, for messages (never its secret). */
  private lastAccessKeyId: string | undefined;

  constructor(
    readonly scope: SigV4Scope,
    /** This machine's clock: the signature's time (tests move it). */
    private readonly now: () => number = Date.now,
  ) {
    this.signer = new SignatureV4({
      service: scope.service,
      region: scope.region,
      credentials: () => this.credentials(),
      sha256: NodeSha256,
      uriEscapePath: true,
      applyChecksum: true,
    });
  }

  private async credentials(): Promise<ChainCredentials> {
    let found: ChainCredentials;
    try {
      found = await this.chain();
    } catch (error) {
      throw new AwsCredentialsUnavailable(excerpt(messageOf(error).split('\n')[0]!, 300), { cause: error });
    }
    registerSecret(found.secretAccessKey);
    registerSecret(found.sessionToken);
    this.lastAccessKeyId = found.accessKeyId;
    return found;
  }

  /** The headers that sign `request` (`authorization`, `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token`), beside its own. */
  async sign(request: RequestToSign): Promise<Record<string, string>> {
    const { url } = request;
    const signed = await this.signer.sign(
      {
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port === '' ? {} : { port: Number(url.port) }),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        // The host the request goes to, as fetch sends it (`host[:port]`, the port only when not the scheme's).
        headers: { ...request.headers, host: url.host },
        ...(request.body === undefined ? {} : { body: request.body }),
      },
      { signingDate: new Date(this.now()) },
    );
    const { host: _host, ...headers } = signed.headers;
    return headers;
  }

  /**
   * Who signs, for `check` and messages: `AKIA…WXYZ/eu-west-1/glue`, the credential scope's parts
   * without its date (the access key id shortened as the AWS CLI's `configure list` shows it).
   */
  async principal(): Promise<string> {
    if (this.lastAccessKeyId === undefined) await this.credentials();
    return `${shortKeyId(this.lastAccessKeyId!)}/${this.scope.region}/${this.scope.service}`;
  }

  /** The access key id of the last signature, shortened; undefined before the first. */
  get accessKey(): string | undefined {
    return this.lastAccessKeyId === undefined ? undefined : shortKeyId(this.lastAccessKeyId);
  }
}

/** `AKIA…WXYZ`: the kind of key (AKIA long-term, ASIA temporary) and its last characters. */
function shortKeyId(accessKeyId: string): string {
  return accessKeyId.length <= 8 ? accessKeyId : `${accessKeyId.slice(0, 4)}…${accessKeyId.slice(-4)}`;
}
