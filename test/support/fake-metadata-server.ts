import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { freePort } from './bigquery-emulator-process.js';
import type { TokenBook } from './google-token-book.js';

/**
 * A fake GCE metadata server on loopback, what Workload Identity looks like to a pod on GKE:
 * google-auth-library finds it through `GCE_METADATA_HOST` (gcp-metadata reads it, and with it set
 * probes it instead of 169.254.169.254 and metadata.google.internal). It answers only requests
 * that carry `Metadata-Flavor: Google` (as the real one does, 403 otherwise), and answers them with
 * that header (the library refuses an answer without it).
 *
 * Faults: `refuseForMs` from the start, or until `refuseUntil` settles (nothing listens yet:
 * connections are refused, the pod's first moments); counted from the first request, so that they hold however long the process under
 * test takes to start: `unavailableForMs` (503 to everything), `tokenUnavailableForMs` (503 on
 * the token path only: the server is up but cannot mint tokens yet).
 */
export interface FakeMetadataOptions {
  book: TokenBook;
  email?: string;
  projectId?: string;
  /** `expires_in` of every token, seconds. Default 3600. */
  tokenLifetimeSeconds?: number;
  refuseForMs?: number;
  /** Refuses connections until this settles (a moment the test chooses, not a time from the start). */
  refuseUntil?: Promise<unknown>;
  unavailableForMs?: number;
  tokenUnavailableForMs?: number;
}

export interface MetadataRequest {
  at: number;
  path: string;
  flavored: boolean;
  status: number;
}

export interface FakeMetadataServer {
  /** `127.0.0.1:PORT`, the value of GCE_METADATA_HOST. */
  host: string;
  email: string;
  requests: MetadataRequest[];
  /** When the faults started counting (the server object's creation). */
  startedAt: number;
  /** From now on 503 to everything (the metadata server failing in the middle of a run), or back. */
  setUnavailable(unavailable: boolean): void;
  close(): Promise<void>;
}

export const TEST_SERVICE_ACCOUNT = 'tilehouse-runner@test-project.iam.gserviceaccount.com';

export async function startFakeMetadataServer(options: FakeMetadataOptions): Promise<FakeMetadataServer> {
  const port = await freePort();
  const startedAt = Date.now();
  const email = options.email ?? TEST_SERVICE_ACCOUNT;
  const requests: MetadataRequest[] = [];
  const lifetime = options.tokenLifetimeSeconds ?? 3600;
  let firstRequestAt: number | undefined;
  let unavailableNow = false;
  const answer = (incoming: IncomingMessage, response: ServerResponse): void => {
    const url = new URL(incoming.url ?? '/', 'http://metadata');
    const flavored = incoming.headers['metadata-flavor'] === 'Google';
    firstRequestAt ??= Date.now();
    const elapsed = Date.now() - firstRequestAt;
    const send = (status: number, body: string, type = 'application/text') => {
      requests.push({ at: Date.now(), path: url.pathname, flavored, status });
      response.writeHead(status, { 'metadata-flavor': 'Google', 'content-type': type });
      response.end(body);
    };
    if (!flavored) return send(403, 'Missing required header: Metadata-Flavor');
    if (unavailableNow || elapsed < (options.unavailableForMs ?? 0)) return send(503, 'service unavailable');
    const path = url.pathname.replace(/^\/computeMetadata\/v1\/?/, '');
    if (path === 'instance' || path === 'instance/') return send(200, 'attributes/\nhostname\nid\nservice-accounts/\nzone\n');
    if (path === 'project/project-id') return send(200, options.projectId ?? 'test-project');
    if (path === `instance/service-accounts/default/email` || path === `instance/service-accounts/${email}/email`) return send(200, email);
    if (path === 'instance/service-accounts/default/token' || path === `instance/service-accounts/${email}/token`) {
      if (elapsed < (options.tokenUnavailableForMs ?? 0)) return send(503, 'token not available yet');
      const issued = options.book.issue('metadata', lifetime);
      return send(200, JSON.stringify({ access_token: issued.token, expires_in: lifetime, token_type: 'Bearer' }), 'application/json');
    }
    return send(404, 'not found');
  };
  const server: Server = createServer(answer);
  const listen = async () => {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
  };
  let listening: Promise<void>;
  let timer: NodeJS.Timeout | undefined;
  if (options.refuseUntil !== undefined) {
    listening = options.refuseUntil.then(listen);
  } else if ((options.refuseForMs ?? 0) > 0) {
    listening = new Promise((resolve, reject) => {
      timer = setTimeout(() => listen().then(resolve, reject), options.refuseForMs);
    });
  } else {
    listening = listen();
    await listening;
  }
  return {
    host: `127.0.0.1:${port}`,
    email,
    requests,
    startedAt,
    setUnavailable(unavailable) {
      unavailableNow = unavailable;
    },
    async close() {
      clearTimeout(timer);
      if (!server.listening) return;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      void listening;
    },
  };
}
