import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

/** A small OTLP/HTTP receiver for the file: every request as `<path> <body>`, answered 200. */
export interface OtlpReceiver {
  /** The value of OTEL_EXPORTER_OTLP_ENDPOINT (filled in by beforeAll). */
  readonly endpoint: string;
  /** Every request so far, `/v1/traces {...}` (bodies as latin1, so protobuf's strings read too). */
  readonly received: string[];
  /** The bodies sent to /v1/traces, joined. */
  traces(): string;
}

export function otlpReceiverForAll(): OtlpReceiver {
  let server: Server;
  const received: string[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push(`${request.url} ${Buffer.concat(chunks).toString('latin1')}`);
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    get endpoint() {
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    received,
    traces: () => received.filter((request) => request.startsWith('/v1/traces ')).join('\n'),
  };
}
