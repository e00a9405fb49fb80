import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A loopback proxy in front of fake-gcs-server that behaves like Cloud Storage where the fake
 * server does not: fake-gcs-server v1.56.1 ignores `ifGenerationMatch` on rewriteTo/copyTo (it
 * copies whatever the precondition says), so a test of "a concurrent writer is detected" against it
 * alone passes whether or not the sink is right. Here every rewrite/copy is checked against the
 * destination's current generation and answered 412 (Cloud Storage's own body) on a mismatch,
 * one rewrite per destination at a time, so the check and the write are one step as they are in
 * Cloud Storage.
 *
 * It can also misbehave in exactly one way per test: answer every rewrite with a fixed failure
 * (`failRewrites`), or hold each rewrite for a while (`holdRewrites`) so a test can kill the
 * writer between its prepare (the temp object exists) and its publish. A held rewrite whose
 * client went away meanwhile is dropped, as a request that never reached the service.
 *
 * Everything else is forwarded as is, Host header included. Resumable uploads go to the session
 * URI the fake server returns, which startFakeGcs's `-external-url` points at the server itself:
 * uploads bypass the proxy, which is fine (fake-gcs-server enforces preconditions on uploads).
 */
export interface GcsPreconditionProxy {
  /** `http://127.0.0.1:PORT`: the STORAGE_EMULATOR_HOST value for clients that go through it. */
  origin: string;
  /** Rewrites received so far (each counted when it arrives, before any hold). */
  readonly rewritesReceived: number;
  /** Rewrites answered 412 by the precondition check. */
  readonly preconditionFailures: number;
  /** Every following rewrite is answered with this status (Cloud Storage's error body); undefined: forward. */
  failRewrites(failure: { status: number; message: string } | undefined): void;
  /** Every following rewrite waits this long before it is checked and forwarded (0: none). */
  holdRewrites(ms: number): void;
  /** Resolves once every rewrite received so far has been answered or dropped. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

const REWRITE = /^\/storage\/v1\/b\/([^/]+)\/o\/([^/]+)\/(?:rewriteTo|copyTo)\/b\/([^/]+)\/o\/([^/?]+)(?:\?(.*))?$/;

function gcsError(response: ServerResponse, status: number, message: string, reason: string): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  response.end(JSON.stringify({ error: { code: status, message, errors: [{ message, domain: 'global', reason }] } }));
}

async function bodyOf(message: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of message) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startGcsPreconditionProxy(upstream: string): Promise<GcsPreconditionProxy> {
  const target = new URL(upstream);
  let failure: { status: number; message: string } | undefined;
  let holdMs = 0;
  let rewritesReceived = 0;
  let preconditionFailures = 0;
  /** One chain per destination object: a rewrite is checked and applied before the next starts. */
  const destinations = new Map<string, Promise<void>>();
  const inFlight = new Set<Promise<void>>();

  function forward(incoming: IncomingMessage, body: Buffer, response: ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const outgoing = request(
        { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
          answer.on('end', resolve);
          answer.on('error', () => resolve());
        },
      );
      outgoing.on('error', (error) => {
        if (!response.headersSent) gcsError(response, 502, `proxy: ${error.message}`, 'backendError');
        else response.destroy();
        resolve();
      });
      outgoing.end(body);
    });
  }

  /** The destination's generation now, 0 when it does not exist (what `ifGenerationMatch: 0` means). */
  async function generationOf(bucket: string, object: string): Promise<number> {
    const answer = await fetch(`${upstream}/storage/v1/b/${bucket}/o/${object}`);
    if (answer.status === 404) return 0;
    if (!answer.ok) throw new Error(`proxy: reading ${bucket}/${object} answered ${answer.status}`);
    return Number(((await answer.json()) as { generation: string }).generation);
  }

  async function rewrite(incoming: IncomingMessage, body: Buffer, response: ServerResponse, match: RegExpExecArray): Promise<void> {
    const [, , , bucket, object, query] = match as unknown as [string, string, string, string, string, string | undefined];
    if (failure !== undefined) return gcsError(response, failure.status, failure.message, failure.status === 403 ? 'forbidden' : 'backendError');
    if (holdMs > 0) await sleep(holdMs);
    // The writer was killed while its rewrite was held: the request never reached the service.
    if (incoming.socket.destroyed || response.destroyed) return;
    const expected = new URLSearchParams(query ?? '').get('ifGenerationMatch');
    if (expected !== null && Number(expected) !== (await generationOf(bucket, object))) {
      preconditionFailures += 1;
      return gcsError(response, 412, 'At least one of the pre-conditions you specified did not hold.', 'conditionNotMet');
    }
    await forward(incoming, body, response);
  }

  const server = createServer((incoming, response) => {
    const match = REWRITE.exec(incoming.url ?? '');
    const handled = bodyOf(incoming).then((body) => {
      if (match === null || incoming.method !== 'POST') return forward(incoming, body, response);
      rewritesReceived += 1;
      const key = `${match[3]}/${match[4]}`;
      const turn = (destinations.get(key) ?? Promise.resolve()).then(() => rewrite(incoming, body, response, match));
      const settled = turn.catch((error: unknown) => {
        if (!response.headersSent) gcsError(response, 500, `proxy: ${(error as Error).message}`, 'backendError');
      });
      destinations.set(key, settled);
      return settled;
    });
    const tracked = handled.catch(() => undefined);
    inFlight.add(tracked);
    void tracked.finally(() => inFlight.delete(tracked));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    get rewritesReceived() {
      return rewritesReceived;
    },
    get preconditionFailures() {
      return preconditionFailures;
    },
    failRewrites(next) {
      failure = next;
    },
    holdRewrites(ms) {
      holdMs = ms;
    },
    async settled() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
