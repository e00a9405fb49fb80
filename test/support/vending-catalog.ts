import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { S3Admission } from './s3-proxy.js';

/**
 * Vended storage credentials, as Polaris, Unity Catalog and BigLake give them out, in front of
 * Apache Iceberg's REST server (which vends none): a catalog proxy that adds short-lived S3 keys to
 * the loadTable and createTable answers of a client that asks (`X-Iceberg-Access-Delegation:
 * vended-credentials`) and serves the specification's `GET …/tables/{table}/credentials`, and the
 * S3 front's admission rule (s3-proxy.ts) that takes only keys this issuer gave out and has not
 * seen expire, refusing every other key (the environment's included) as S3 does.
 */

export interface IssuedKey {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiresAtMs: number;
  /** The table location they were vended for. */
  prefix: string;
}

/** Gives out S3 keys that last `lifetimeMs` (changeable between tests), and judges a request's key by them. */
export class S3KeyIssuer {
  readonly issued: IssuedKey[] = [];
  lifetimeMs: number;

  constructor(lifetimeMs = 3_600_000) {
    this.lifetimeMs = lifetimeMs;
  }

  issue(prefix: string): IssuedKey {
    const key: IssuedKey = {
      accessKeyId: `VENDED${randomBytes(8).toString('hex').toUpperCase()}`,
      secretAccessKey: randomBytes(24).toString('base64url'),
      sessionToken: `vended-session-${randomBytes(24).toString('base64url')}`,
      expiresAtMs: Date.now() + this.lifetimeMs,
      prefix,
    };
    this.issued.push(key);
    return key;
  }

  /** Every value a leak would show: the key ids, secrets and session tokens given out. */
  secrets(): string[] {
    return this.issued.flatMap((key) => [key.accessKeyId, key.secretAccessKey, key.sessionToken]);
  }

  /**
   * The S3 front's rule: a key this issuer gave out, with its own session token, before it expired;
   * or, with `environment`, that key id too (a catalog that vends none). Anything else is refused
   * with the answer S3 gives it (InvalidAccessKeyId 403, ExpiredToken 400).
   */
  admission(environment: { accessKeyId: string; admitted: boolean }): S3Admission {
    return ({ accessKeyId, sessionToken }) => {
      if (accessKeyId === environment.accessKeyId && environment.admitted) return undefined;
      const key = this.issued.find((candidate) => candidate.accessKeyId === accessKeyId);
      if (key === undefined || key.sessionToken !== sessionToken)
        return { status: 403, code: 'InvalidAccessKeyId', message: 'The AWS Access Key Id you provided does not exist in our records.' };
      if (Date.now() >= key.expiresAtMs) return { status: 400, code: 'ExpiredToken', message: 'The provided token has expired.' };
      return undefined;
    };
  }
}

/** How the proxy vends: in `storage-credentials` (the newer list, by prefix), in `config`, or not at all. */
export type VendingShape = 'storage-credentials' | 'config' | 'none';

export interface CatalogRequest {
  method: string;
  path: string;
  /** The X-Iceberg-Access-Delegation header the client sent, if any. */
  delegation: string | undefined;
}

export interface VendingCatalogProxy {
  uri: string;
  readonly requests: CatalogRequest[];
  /** Credentials-endpoint requests answered. */
  readonly renewals: number;
  close(): Promise<void>;
}

const TABLE = /^\/v1\/(?:[^/]+\/)?namespaces\/[^/]+\/tables\/[^/]+$/;
const TABLES = /^\/v1\/(?:[^/]+\/)?namespaces\/[^/]+\/tables$/;
const CREDENTIALS = /^\/v1\/(?:[^/]+\/)?namespaces\/([^/]+)\/tables\/([^/]+)\/credentials$/;
const CREDENTIALS_ENDPOINT = 'GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials';

function s3Config(key: IssuedKey, endpoint: string): Record<string, string> {
  return {
    's3.access-key-id': key.accessKeyId,
    's3.secret-access-key': key.secretAccessKey,
    's3.session-token': key.sessionToken,
    's3.session-token-expires-at-ms': String(key.expiresAtMs),
    // Not credentials: beside them as Polaris sends them, and ignored by tilehouse (its endpoint is sinks.s3's).
    's3.endpoint': endpoint,
    'client.region': 'us-east-1',
  };
}

async function bodyOf(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Starts the catalog proxy in front of `upstream` (the REST server). `advertiseCredentialsEndpoint`:
 * `/v1/config` lists the credentials endpoint (else a client renews by loading the table again).
 */
export async function startVendingCatalogProxy(
  upstream: string,
  issuer: S3KeyIssuer,
  options: { shape: VendingShape; advertiseCredentialsEndpoint: boolean; s3Endpoint: string },
): Promise<VendingCatalogProxy> {
  const target = new URL(upstream);
  const requests: CatalogRequest[] = [];
  const locations = new Map<string, string>();
  let renewals = 0;
  const forward = (incoming: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const headers = { ...incoming.headers };
      delete headers['content-length'];
      // Answers are read as text here (and spliced into): never compressed.
      delete headers['accept-encoding'];
      const outgoing = request(
        { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: { ...headers, 'content-length': body.length } },
        (answer) => {
          bodyOf(answer).then((bytes) => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: bytes }), reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  const answerJson = (response: ServerResponse, status: number, value: unknown) => {
    const text = JSON.stringify(value);
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    response.end(text);
  };
  const server: Server = createServer((incoming, response) => {
    void (async () => {
      const method = incoming.method ?? 'GET';
      const path = new URL(incoming.url ?? '/', 'http://proxy').pathname;
      const header = incoming.headers['x-iceberg-access-delegation'];
      const delegation = Array.isArray(header) ? header.join(',') : header;
      requests.push({ method, path, delegation });
      const body = await bodyOf(incoming);
      const renewal = CREDENTIALS.exec(path);
      if (method === 'GET' && renewal !== null) {
        const location = locations.get(`${decodeURIComponent(renewal[1]!)}.${decodeURIComponent(renewal[2]!)}`);
        if (location === undefined || options.shape === 'none') return answerJson(response, 200, { 'storage-credentials': [] });
        renewals += 1;
        return answerJson(response, 200, { 'storage-credentials': [{ prefix: location, config: s3Config(issuer.issue(location), options.s3Endpoint) }] });
      }
      const answer = await forward(incoming, body);
      const headers = { ...answer.headers };
      delete headers['content-length'];
      delete headers['transfer-encoding'];
      const vends = answer.status === 200 && ((method === 'GET' && TABLE.test(path)) || (method === 'POST' && TABLES.test(path)));
      if (method === 'GET' && path === '/v1/config' && answer.status === 200) {
        const config = JSON.parse(answer.body.toString('utf8')) as { endpoints?: string[] };
        const endpoints = (config.endpoints ?? []).filter((endpoint) => endpoint !== CREDENTIALS_ENDPOINT);
        return answerJson(response, 200, { ...config, endpoints: options.advertiseCredentialsEndpoint ? [...endpoints, CREDENTIALS_ENDPOINT] : endpoints });
      }
      if (!vends) {
        response.writeHead(answer.status, { ...headers, 'content-length': answer.body.length });
        return response.end(answer.body);
      }
      // Spliced into the answer's text, never parsed and written again: snapshot ids are 64-bit.
      const text = answer.body.toString('utf8');
      const location = /"location"\s*:\s*"([^"]+)"/.exec(text)?.[1];
      if (location === undefined) throw new Error(`no table location in the answer to ${method} ${path}`);
      const segments = path.split('/');
      const table =
        method === 'GET'
          ? `${decodeURIComponent(segments.at(-3)!)}.${decodeURIComponent(segments.at(-1)!)}`
          : `${decodeURIComponent(segments.at(-2)!)}.${(JSON.parse(body.toString('utf8')) as { name: string }).name}`;
      locations.set(table, location);
      const send = (spliced: string) => {
        response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(spliced) });
        response.end(spliced);
      };
      if (delegation !== 'vended-credentials' || options.shape === 'none') return send(text);
      const credentials = JSON.stringify(s3Config(issuer.issue(location), options.s3Endpoint));
      if (options.shape === 'storage-credentials') {
        const listed = `[{"prefix":${JSON.stringify(location)},"config":${credentials}}]`;
        // In place of the server's own (empty) list when it sends one: a second key would be the one a parser keeps.
        const own = /"storage-credentials"\s*:\s*\[\s*\]/;
        return send(own.test(text) ? text.replace(own, `"storage-credentials":${listed}`) : text.replace(/^\s*\{/, `{"storage-credentials":${listed},`));
      }
      // Into the answer's own config, or a config of its own when it has none.
      return send(
        /"config"\s*:\s*\{\s*\}/.test(text)
          ? text.replace(/"config"\s*:\s*\{\s*\}/, `"config":${credentials}`)
          : /"config"\s*:\s*\{/.test(text)
            ? text.replace(/"config"\s*:\s*\{/, `"config":${credentials.slice(0, -1)},`)
            : text.replace(/^\s*\{/, `{"config":${credentials},`),
      );
    })().catch((error: unknown) => {
      if (!response.headersSent) answerJson(response, 502, { error: { message: String(error), type: 'ProxyError', code: 502 } });
      else response.destroy();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    uri: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get renewals() {
      return renewals;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
