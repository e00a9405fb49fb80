import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';

/**
 * A loopback proxy in front of fake-gcs-server (or the precondition proxy in front of it) that
 * fails exactly one request of one kind, the ways Cloud Storage documents a request can fail:
 * an error status it did not act on (408/429/5xx), a reset connection, no answer at all, an answer
 * lost after the request was performed, a chunk persisted only in part, a 308 without Range
 * (nothing persisted), a session it no longer knows (404/410).
 *
 * Resumable uploads go to the session URI the server returns, built from fake-gcs-server's
 * `-external-url` (the server itself): the proxy rewrites the `Location` of each session start to
 * point back at itself, so every chunk goes through it.
 *
 * fake-gcs-server v1.56.1 does not keep a session's offset as Cloud Storage does: it takes a
 * status query (`Content-Range: bytes *\/*`) for the end of a streaming upload and commits the
 * object, and it appends every chunk whatever offset it claims. So the proxy keeps each session's
 * persisted offset itself and answers status queries as Cloud Storage documents (308 with
 * `Range: bytes=0-N`, none when nothing is persisted; the object once complete), and refuses a
 * chunk that does not start where the session stands (400), which real Cloud Storage would not
 * store at that offset either. Without this a test of "resume from the persisted offset" against
 * the fake server would pass or fail for reasons of the fake server's own.
 */
export type RequestKind = 'session-start' | 'chunk' | 'finalize' | 'status-query' | 'rewrite' | 'delete' | 'metadata' | 'other';

export type Fault =
  /** Answered with this status and Cloud Storage's error body; the request never reaches the server. */
  | { kind: 'status'; status: number }
  /** The connection is destroyed before anything is forwarded. */
  | { kind: 'reset' }
  /** Nothing is forwarded and nothing answered; the client's timeout ends it. */
  | { kind: 'hang' }
  /** Forwarded and performed; then the client's connection is destroyed instead of the answer. */
  | { kind: 'lost-answer' }
  /** Forwarded and performed; the client gets this status instead of the real answer (a 503 after the fact, a 412 to a retry). */
  | { kind: 'answer-instead'; status: number }
  /** A chunk: only its first `bytes` are forwarded; the client gets the server's 308 for those. */
  | { kind: 'partial-chunk'; bytes: number }
  /** Answered 308 without a Range header (the session persisted nothing), not forwarded. */
  | { kind: 'no-range-308' };

export interface FaultRule {
  on: RequestKind;
  fault: Fault;
  /** Only requests whose URL contains this (an object name, URL-encoded as sent). */
  urlContains?: string;
  /** Fails the nth matching request (1 = the first); one-shot. */
  nth?: number;
}

export interface GcsFaultProxy {
  origin: string;
  /** Every request as `<kind> <METHOD> <url>`, in arrival order. */
  readonly seen: string[];
  /** The rules that fired, as `<kind>:<fault>`. */
  readonly fired: string[];
  /** Arms one more rule (one-shot). */
  fail(rule: FaultRule): void;
  /** Rules armed that have not fired. */
  readonly pending: number;
  /** Drops every armed rule. */
  disarm(): void;
  close(): Promise<void>;
}

export function kindOf(incoming: IncomingMessage): RequestKind {
  const url = incoming.url ?? '';
  const method = incoming.method ?? 'GET';
  if (method === 'POST' && url.startsWith('/upload/') && url.includes('uploadType=resumable')) return 'session-start';
  if (method === 'PUT' && url.includes('upload_id=')) {
    const range = String(incoming.headers['content-range'] ?? '');
    if (range === 'bytes */*') return 'status-query';
    return /\/\*$/.test(range) ? 'chunk' : 'finalize';
  }
  if (method === 'POST' && /\/(?:rewriteTo|copyTo)\//.test(url)) return 'rewrite';
  if (method === 'DELETE' && url.startsWith('/storage/v1/b/')) return 'delete';
  if (method === 'GET' && /^\/storage\/v1\/b\/[^/]+\/o\/[^/?]+/.test(url)) return 'metadata';
  return 'other';
}

function answerError(response: ServerResponse, status: number): void {
  const message =
    status === 503 ? 'Service Unavailable' : status === 412 ? 'At least one of the pre-conditions you specified did not hold.' : `injected ${status}`;
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  response.end(
    JSON.stringify({ error: { code: status, message, errors: [{ message, domain: 'global', reason: status === 412 ? 'conditionNotMet' : 'backendError' }] } }),
  );
}

async function bodyOf(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startGcsFaultProxy(upstream: string): Promise<GcsFaultProxy> {
  const target = new URL(upstream);
  const seen: string[] = [];
  const fired: string[] = [];
  const rules: Array<FaultRule & { count: number }> = [];
  const sockets = new Set<Socket>();
  /** Per upload_id: bytes persisted, and the object's answer once complete. */
  const sessions = new Map<
    string,
    { persisted: number; complete?: { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer } }
  >();

  function sessionOf(url: string) {
    const id = new URL(url, 'http://proxy').searchParams.get('upload_id') ?? '';
    let session = sessions.get(id);
    if (session === undefined) {
      session = { persisted: 0 };
      sessions.set(id, session);
    }
    return session;
  }

  /** A chunk or final request, forwarded only when it starts where the session stands; the session's books kept. */
  async function toSession(incoming: IncomingMessage, body: Buffer, headers: IncomingMessage['headers']) {
    const session = sessionOf(incoming.url ?? '');
    if (session.complete !== undefined) return session.complete;
    const range = String(headers['content-range'] ?? '');
    if (range === 'bytes */*') {
      return { status: 308, headers: session.persisted === 0 ? {} : { range: `bytes=0-${session.persisted - 1}` }, body: Buffer.alloc(0) };
    }
    const start = /^bytes (\d+)-/.exec(range);
    if (start !== null && Number(start[1]) !== session.persisted) {
      const message = `proxy: chunk starts at ${start[1]}, the session holds ${session.persisted} bytes`;
      return { status: 400, headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ error: { code: 400, message } })) };
    }
    const answer = await forward(incoming, body, headers);
    if (answer.status === 308) {
      const held = /^bytes=0-(\d+)$/.exec(String(answer.headers.range ?? ''));
      session.persisted = held === null ? session.persisted : Number(held[1]) + 1;
    } else if (answer.status === 200 || answer.status === 201) {
      session.complete = answer;
    }
    return answer;
  }
  let origin = '';

  function forward(
    incoming: IncomingMessage,
    body: Buffer,
    headers: IncomingMessage['headers'],
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const outgoing = request(
        {
          host: target.hostname,
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...headers, 'content-length': String(body.length) },
        },
        (answer) => {
          bodyOf(answer).then((answerBody) => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: answerBody }), reject);
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  }

  function reply(response: ServerResponse, answer: { status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }): void {
    const headers = { ...answer.headers };
    // The session URI points at the server; point it back at the proxy so every chunk comes here.
    if (typeof headers.location === 'string') headers.location = headers.location.replace(/^https?:\/\/[^/]+/, origin);
    delete headers['transfer-encoding'];
    headers['content-length'] = String(answer.body.length);
    response.writeHead(answer.status, headers);
    response.end(answer.body);
  }

  /** The first armed rule for this request counts it; it fires on its nth. Rules fire in the order armed. */
  function ruleFor(kind: RequestKind, url: string): (FaultRule & { count: number }) | undefined {
    const rule = rules.find((candidate) => candidate.on === kind && (candidate.urlContains === undefined || url.includes(candidate.urlContains)));
    if (rule === undefined) return undefined;
    rule.count += 1;
    if (rule.count !== (rule.nth ?? 1)) return undefined;
    rules.splice(rules.indexOf(rule), 1);
    return rule;
  }

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await bodyOf(incoming);
    const kind = kindOf(incoming);
    const url = incoming.url ?? '';
    seen.push(`${kind} ${incoming.method} ${url}`);
    const rule = ruleFor(kind, url);
    const isSession = kind === 'chunk' || kind === 'finalize' || kind === 'status-query';
    const pass = (part: Buffer, headers: IncomingMessage['headers']) => (isSession ? toSession(incoming, part, headers) : forward(incoming, part, headers));
    if (rule === undefined) return reply(response, await pass(body, incoming.headers));
    const { fault } = rule;
    fired.push(`${kind}:${fault.kind}`);
    switch (fault.kind) {
      case 'status':
        return answerError(response, fault.status);
      case 'reset':
        incoming.socket.destroy();
        return;
      case 'hang':
        return;
      case 'no-range-308':
        // Nothing persisted: the session stands where it stood before this chunk.
        response.writeHead(308, { 'content-length': '0' });
        response.end();
        return;
      case 'lost-answer':
        await pass(body, incoming.headers);
        incoming.socket.destroy();
        return;
      case 'answer-instead':
        await pass(body, incoming.headers);
        return answerError(response, fault.status);
      case 'partial-chunk': {
        const match = /^bytes (\d+)-(\d+)\/(.+)$/.exec(String(incoming.headers['content-range']));
        if (match === null) throw new Error(`partial-chunk on a request without a byte range: ${String(incoming.headers['content-range'])}`);
        const start = Number(match[1]);
        const part = body.subarray(0, fault.bytes);
        const headers = { ...incoming.headers, 'content-range': `bytes ${start}-${start + part.length - 1}/*` };
        return reply(response, await pass(part, headers));
      }
    }
  }

  const server = createServer((incoming, response) => {
    handle(incoming, response).catch((error: unknown) => {
      if (!response.headersSent) answerError(response, 502);
      else response.destroy(error as Error);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    seen,
    fired,
    fail(rule) {
      rules.push({ ...rule, count: 0 });
    },
    get pending() {
      return rules.length;
    },
    disarm() {
      rules.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
