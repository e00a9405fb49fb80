import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback proxy in front of fake-gcs-server that answers chosen requests the way real Cloud
 * Storage does (what the fake server cannot: preconditions on rewrite, IAM) and records every
 * request line, so a test can assert on the exact request the client sent.
 */
export type Intercept = (incoming: IncomingMessage, response: ServerResponse) => boolean;

/** Forwards everything to `upstream` (Host unchanged), except what `intercept` answers itself. */
export async function startGcsProxy(upstream: string, intercept: Intercept): Promise<{ origin: string; seen: string[]; close(): Promise<void> }> {
  const target = new URL(upstream);
  const seen: string[] = [];
  const server: Server = createServer((incoming, response) => {
    seen.push(`${incoming.method} ${incoming.url}`);
    if (intercept(incoming, response)) return;
    const forwarded = request(
      { host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    incoming.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export function answerJson(response: ServerResponse, status: number, reason: string, message: string): true {
  // The shape of Cloud Storage's JSON API errors.
  response.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  response.end(JSON.stringify({ error: { code: status, message, errors: [{ message, domain: 'global', reason }] } }));
  return true;
}
