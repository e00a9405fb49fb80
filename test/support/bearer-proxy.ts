import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TokenBook, TokenVerdict } from './google-token-book.js';

/**
 * A loopback proxy in front of the BigQuery emulator or fake-gcs-server that does what Google's
 * front end does and the emulators do not: every request must carry `Authorization: Bearer` with a
 * token the test's issuers gave out and that has not expired or been revoked, else 401. Every
 * request is recorded with its verdict, so a test can say that none went without a valid token.
 *
 * `fault` answers chosen requests itself (a 401 or 403), after the token check. Location headers
 * (fake-gcs-server's resumable upload sessions) are rewritten to point back at the proxy, so the
 * upload's chunks pass it too.
 */
export interface ProxiedRequest {
  method: string;
  path: string;
  verdict: TokenVerdict;
  token?: string | undefined;
  /** Its `x-goog-user-project` header (the project BigLake and other Google APIs bill), if any. */
  userProject?: string | undefined;
  status: number;
}

export type BearerFault = (request: { method: string; path: string; token: string | undefined }, response: ServerResponse) => boolean;

export interface BearerProxy {
  origin: string;
  requests: ProxiedRequest[];
  /** Replaces the fault rule (e.g. between tests). */
  setFault(fault: BearerFault | undefined): void;
  /** Delays every forwarded request by this long (a slow service, for a run that outlives its tokens). */
  setDelayMs(ms: number): void;
  close(): Promise<void>;
}

export function googleError(response: ServerResponse, status: number, reason: string, message: string): true {
  const statusText = status === 401 ? 'UNAUTHENTICATED' : status === 403 ? 'PERMISSION_DENIED' : 'FAILED';
  response.writeHead(status, {
    'content-type': 'application/json; charset=UTF-8',
    ...(status === 401 ? { 'www-authenticate': 'Bearer realm="https://accounts.google.com/"' } : {}),
  });
  response.end(JSON.stringify({ error: { code: status, message, status: statusText, errors: [{ message, domain: 'global', reason }] } }));
  return true;
}

export async function startBearerProxy(upstream: string, book: TokenBook): Promise<BearerProxy> {
  const target = new URL(upstream);
  const requests: ProxiedRequest[] = [];
  let fault: BearerFault | undefined;
  let delayMs = 0;
  let origin = '';
  const server: Server = createServer((incoming: IncomingMessage, response: ServerResponse) => {
    const method = incoming.method ?? 'GET';
    const path = incoming.url ?? '/';
    const { verdict, token } = book.verdict(incoming.headers.authorization);
    const userProject = incoming.headers['x-goog-user-project'];
    const record: ProxiedRequest = { method, path, verdict, token, status: 0, ...(typeof userProject === 'string' ? { userProject } : {}) };
    requests.push(record);
    response.on('finish', () => {
      record.status = response.statusCode;
    });
    if (verdict !== 'valid') {
      incoming.resume();
      googleError(response, 401, 'authError', `Request had invalid authentication credentials (${verdict} token). Expected OAuth 2 access token.`);
      return;
    }
    if (fault?.({ method, path, token }, response) === true) {
      incoming.resume();
      return;
    }
    const forward = () => {
      const headers = { ...incoming.headers };
      delete headers.authorization;
      const forwarded = request({ host: target.hostname, port: target.port, method, path, headers }, (answer) => {
        const answerHeaders = { ...answer.headers };
        if (typeof answerHeaders.location === 'string') answerHeaders.location = answerHeaders.location.replace(target.origin, origin);
        response.writeHead(answer.statusCode ?? 502, answerHeaders);
        answer.pipe(response);
      });
      forwarded.on('error', () => response.destroy());
      incoming.pipe(forwarded);
    };
    if (delayMs > 0) setTimeout(forward, delayMs);
    else forward();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    requests,
    setFault(next) {
      fault = next;
    },
    setDelayMs(ms) {
      delayMs = ms;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
