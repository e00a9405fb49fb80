import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { HeadObjectCommand, S3Client } from '@aws-sdk/client-s3';

/**
 * A loopback proxy in front of the S3-compatible test server (moto) that does what S3 does and
 * the server does not, and fails chosen requests the ways S3 documents.
 *
 * What it enforces, measured (docs/s3.md, "What the test server does"): moto 5.2.5 (and MinIO
 * 2026-02) copies an object whatever the destination conditions of a
 * CopyObject say (`If-Match`, `If-None-Match: *`): both answer 200 and overwrite. Amazon S3
 * answers 412 PreconditionFailed (conditional copy, 2025). So a CopyObject that carries either
 * header is checked here first against the destination's current ETag (read from the server), and
 * refused with S3's 412 when it does not hold; the check and the copy run under one lock per
 * destination key, so two copies through the proxy cannot both pass it, as S3 would not let them.
 * (moto also ignores `If-Match` on CompleteMultipartUpload; tilehouse sends none.)
 *
 * moto 5.2.5 answers every ListMultipartUploads with one constant `Initiated` (2010-11-10), so an
 * upload begun a moment ago looks years old; S3 answers when the upload began. The proxy notes
 * when each CreateMultipartUpload it passed on was answered and puts that time in the listing. moto
 * also answers every upload in one page whatever `max-uploads` asks; the proxy pages the answer as S3
 * does (by key, then upload id, after `key-marker` / `upload-id-marker`).
 *
 * Faults, one-shot: an S3 error status it did not act on (503 SlowDown, 500 InternalError), a reset
 * connection, and an answer lost after the request was performed.
 *
 * Admission (`admit`): moto takes any key pair; S3 takes only its account's. A rule judges each
 * request's access key id (from its SigV4 `Authorization` credential scope) and session token
 * (`x-amz-security-token`) before anything else, and a refusal is answered as S3 answers it
 * (vending-catalog.ts: only the keys a catalog vended, until they expire).
 */
export type S3Admission = (request: {
  accessKeyId: string | undefined;
  sessionToken: string | undefined;
  kind: S3RequestKind;
  url: string;
}) => { status: number; code: string; message: string } | undefined;
export type S3RequestKind =
  | 'copy'
  | 'put'
  | 'upload-part'
  | 'create-multipart'
  | 'complete-multipart'
  | 'abort-multipart'
  | 'head'
  | 'get'
  | 'list'
  | 'delete'
  | 'other';

export type S3Fault = { kind: 'status'; status: number; code: string } | { kind: 'reset' } | { kind: 'lost-answer' };

export interface S3FaultRule {
  on: S3RequestKind;
  fault: S3Fault;
  /** Only requests whose path contains this (a key, URL-encoded as sent). */
  urlContains?: string;
  /** Fails the nth matching request (1 = the first). */
  nth?: number;
  /** Fails this many matching requests in a row (default 1). */
  times?: number;
}

export interface S3Proxy {
  origin: string;
  readonly seen: string[];
  readonly fired: string[];
  fail(rule: S3FaultRule): void;
  readonly pending: number;
  disarm(): void;
  /** Holds every CopyObject this long before performing it (so a kill can land while the publish is under way). */
  holdCopies(ms: number): void;
  /** CopyObject requests received so far. */
  readonly copiesReceived: number;
  /** Resolves once no request is in flight (a killed client's copy still completes upstream). */
  settled(): Promise<void>;
  /** Judges every later request by `rule` (undefined: every request is let through, as moto does). */
  admit(rule: S3Admission | undefined): void;
  /** Each request the admission rule refused: `<kind> <code> <access key id>`. */
  readonly refused: string[];
  /** Holds the next `count` requests of `kind` whose URL contains `urlContains` this long, after admission (a run that outlives its keys). */
  hold(rule: { on: S3RequestKind; urlContains: string; ms: number; count?: number }): void;
  close(): Promise<void>;
}

export function s3KindOf(incoming: IncomingMessage): S3RequestKind {
  const url = new URL(incoming.url ?? '/', 'http://proxy');
  const method = incoming.method ?? 'GET';
  const query = url.searchParams;
  if (method === 'PUT' && incoming.headers['x-amz-copy-source'] !== undefined) return 'copy';
  if (method === 'PUT' && query.has('uploadId')) return 'upload-part';
  if (method === 'PUT') return 'put';
  if (method === 'POST' && query.has('uploads')) return 'create-multipart';
  if (method === 'POST' && query.has('uploadId')) return 'complete-multipart';
  if (method === 'DELETE' && query.has('uploadId')) return 'abort-multipart';
  if (method === 'DELETE') return 'delete';
  if (method === 'HEAD') return 'head';
  if (method === 'GET' && url.pathname.split('/').filter(Boolean).length >= 2) return 'get';
  if (method === 'GET') return 'list';
  return 'other';
}

function answerError(response: ServerResponse, status: number, code: string, message: string): void {
  response.writeHead(status, { 'content-type': 'application/xml' });
  response.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>proxy</RequestId></Error>`);
}

async function bodyOf(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startS3Proxy(upstream: string): Promise<S3Proxy> {
  const target = new URL(upstream);
  const seen: string[] = [];
  const fired: string[] = [];
  const rules: Array<S3FaultRule & { count: number; left: number }> = [];
  const sockets = new Set<Socket>();
  const locks = new Map<string, Promise<void>>();
  const initiated = new Map<string, Date>();
  let holdMs = 0;
  let admission: S3Admission | undefined;
  const refused: string[] = [];
  const holds: Array<{ on: S3RequestKind; urlContains: string; ms: number; left: number }> = [];
  let copies = 0;
  let inFlight = 0;
  const idle: Array<() => void> = [];
  // The proxy's own reads of a destination, signed as moto wants (any key pair).
  const reader = new S3Client({
    endpoint: upstream,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'proxy', secretAccessKey: 'proxy' },
    maxAttempts: 1,
  });

  function ruleFor(kind: S3RequestKind, url: string) {
    for (const rule of rules) {
      if (rule.on !== kind || (rule.urlContains !== undefined && !url.includes(rule.urlContains))) continue;
      rule.count += 1;
      if (rule.count < (rule.nth ?? 1)) continue;
      rule.left -= 1;
      if (rule.left <= 0) rules.splice(rules.indexOf(rule), 1);
      return rule;
    }
    return undefined;
  }

  function forward(incoming: IncomingMessage, body: Buffer): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const outgoing = request(
        { hostname: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
        (answer) => {
          bodyOf(answer).then((bytes) => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: bytes }), reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  /** Whether a CopyObject's destination conditions hold now (S3's rules: If-None-Match only `*`). */
  async function copyConditionHolds(incoming: IncomingMessage): Promise<boolean> {
    const ifMatch = incoming.headers['if-match'];
    const ifNoneMatch = incoming.headers['if-none-match'];
    if (ifMatch === undefined && ifNoneMatch === undefined) return true;
    const [, bucket = '', ...rest] = new URL(incoming.url ?? '/', 'http://proxy').pathname.split('/');
    const key = rest.map(decodeURIComponent).join('/');
    let etag: string | undefined;
    try {
      etag = (await reader.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag;
    } catch (error) {
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 404) throw error;
    }
    if (ifNoneMatch !== undefined && etag !== undefined) return false;
    if (ifMatch !== undefined && (etag === undefined || etag.replaceAll('"', '') !== String(ifMatch).replaceAll('"', ''))) return false;
    return true;
  }

  async function withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = locks.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    locks.set(
      key,
      previous.then(() => mine),
    );
    await previous;
    try {
      return await work();
    } finally {
      release();
    }
  }

  const server = createServer((incoming, response) => {
    inFlight += 1;
    void (async () => {
      const kind = s3KindOf(incoming);
      if (kind === 'copy') {
        copies += 1;
        if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
      }
      const url = incoming.url ?? '';
      seen.push(`${kind} ${incoming.method} ${url}`);
      const body = await bodyOf(incoming);
      if (admission !== undefined) {
        const accessKeyId = /Credential=([^/,\s]+)\//.exec(String(incoming.headers.authorization ?? ''))?.[1];
        const token = incoming.headers['x-amz-security-token'];
        const refusal = admission({ accessKeyId, sessionToken: Array.isArray(token) ? token[0] : token, kind, url });
        if (refusal !== undefined) {
          refused.push(`${kind} ${refusal.code} ${accessKeyId ?? '(unsigned)'}`);
          return answerError(response, refusal.status, refusal.code, refusal.message);
        }
      }
      const held = holds.find((candidate) => candidate.on === kind && url.includes(candidate.urlContains));
      if (held !== undefined) {
        held.left -= 1;
        if (held.left <= 0) holds.splice(holds.indexOf(held), 1);
        await new Promise((resolve) => setTimeout(resolve, held.ms));
      }
      const rule = ruleFor(kind, url);
      if (rule !== undefined) fired.push(`${kind}:${rule.fault.kind}`);
      if (rule?.fault.kind === 'status') return answerError(response, rule.fault.status, rule.fault.code, `injected ${rule.fault.code}`);
      if (rule?.fault.kind === 'reset') return response.socket?.destroy();
      const perform = async () => {
        if (kind === 'copy' && !(await copyConditionHolds(incoming))) return { status: 412, headers: {}, body: Buffer.alloc(0), refused: true };
        return { ...(await forward(incoming, body)), refused: false };
      };
      const answer = kind === 'copy' ? await withLock(new URL(url, 'http://proxy').pathname, perform) : await perform();
      if (rule?.fault.kind === 'lost-answer') return response.socket?.destroy();
      if (answer.refused) return answerError(response, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold');
      const headers = { ...answer.headers };
      delete headers['transfer-encoding'];
      let sent = answer.body;
      if (kind === 'create-multipart' && answer.status === 200) {
        const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(answer.body.toString('utf8'))?.[1];
        if (uploadId !== undefined) initiated.set(uploadId, new Date());
      }
      if (kind === 'list' && new URL(url, 'http://proxy').searchParams.has('uploads') && answer.status === 200) {
        const query = new URL(url, 'http://proxy').searchParams;
        sent = Buffer.from(pagedUploads(withRealInitiated(answer.body.toString('utf8'), initiated), query));
        delete headers['content-length'];
      }
      response.writeHead(answer.status, headers);
      response.end(sent);
    })()
      .catch((error: unknown) => {
        if (!response.headersSent) answerError(response, 502, 'ProxyError', String(error));
        else response.destroy();
      })
      .finally(() => {
        inFlight -= 1;
        if (inFlight === 0) for (const resolve of idle.splice(0)) resolve();
      });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    fired,
    fail(rule) {
      rules.push({ ...rule, count: 0, left: rule.times ?? 1 });
    },
    get pending() {
      return rules.length;
    },
    disarm() {
      rules.length = 0;
    },
    holdCopies(ms) {
      holdMs = ms;
    },
    get copiesReceived() {
      return copies;
    },
    admit(rule) {
      admission = rule;
    },
    refused,
    hold(rule) {
      holds.push({ ...rule, left: rule.count ?? 1 });
    },
    settled() {
      return inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => idle.push(resolve));
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      reader.destroy();
    },
  };
}

/** A ListMultipartUploads answer with each upload's `Initiated` the time the proxy saw it begin (moto's is a constant). */
function withRealInitiated(xml: string, initiated: ReadonlyMap<string, Date>): string {
  return xml.replaceAll(/<Upload>[\s\S]*?<\/Upload>/g, (upload) => {
    const uploadId = /<UploadId>([^<]+)<\/UploadId>/.exec(upload)?.[1];
    const when = uploadId === undefined ? undefined : initiated.get(uploadId);
    return when === undefined ? upload : upload.replace(/<Initiated>[^<]*<\/Initiated>/, `<Initiated>${when.toISOString()}</Initiated>`);
  });
}

/** A ListMultipartUploads answer cut to the page `query` asks for (`max-uploads` after the markers), as S3 pages it. */
function pagedUploads(xml: string, query: URLSearchParams): string {
  const max = Number(query.get('max-uploads') ?? '1000');
  const keyMarker = query.get('key-marker') ?? '';
  const uploadIdMarker = query.get('upload-id-marker') ?? '';
  const field = (upload: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(upload)?.[1] ?? '';
  const uploads = [...xml.matchAll(/<Upload>[\s\S]*?<\/Upload>/g)]
    .map((match) => match[0])
    .map((upload) => ({ upload, key: field(upload, 'Key'), id: field(upload, 'UploadId') }))
    .sort((a, b) => (a.key === b.key ? (a.id < b.id ? -1 : 1) : a.key < b.key ? -1 : 1))
    .filter(({ key, id }) => keyMarker === '' || key > keyMarker || (key === keyMarker && uploadIdMarker !== '' && id > uploadIdMarker));
  const page = uploads.slice(0, max);
  const last = page.at(-1);
  const truncated = uploads.length > page.length && last !== undefined;
  const first = xml.search(/<Upload>/);
  const end = xml.lastIndexOf('</Upload>');
  const head = (first < 0 ? xml.slice(0, xml.lastIndexOf('</ListMultipartUploadsResult>')) : xml.slice(0, first)).replace(
    /<IsTruncated>[^<]*<\/IsTruncated>/,
    `<IsTruncated>${truncated}</IsTruncated>${truncated ? `<NextKeyMarker>${last.key}</NextKeyMarker><NextUploadIdMarker>${last.id}</NextUploadIdMarker>` : ''}`,
  );
  const tail = first < 0 ? xml.slice(xml.lastIndexOf('</ListMultipartUploadsResult>')) : xml.slice(end + '</Upload>'.length);
  return `${head}${page.map(({ upload }) => upload).join('')}${tail}`;
}
