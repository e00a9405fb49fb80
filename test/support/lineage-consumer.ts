import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One request a consumer received: its path, headers and body (gunzipped when it said gzip), as JSON. */
export interface ReceivedEvent {
  path: string;
  headers: IncomingHttpHeaders;
  event: Record<string, unknown>;
}

/** How the consumer answers: 200 to a request with the right bearer token (401 otherwise), a status, or never. */
export type ConsumerMode = { answer: 'ok'; apiKey?: string } | { answer: 'status'; status: number; body?: string } | { answer: 'never' };

export interface LineageConsumer {
  /** http://127.0.0.1:PORT */
  url: string;
  received: ReceivedEvent[];
  /** Requests it left unanswered (mode never), still open. */
  hanging(): number;
  close(): Promise<void>;
}

/**
 * An OpenLineage HTTP consumer on loopback, Marquez's API as a producer sees it: POST
 * /api/v1/lineage with one RunEvent, 2xx when taken. It checks the bearer token, records every
 * event in arrival order, and can fail in the ways a consumer does (a status, or no answer at all).
 */
export async function startLineageConsumer(mode: ConsumerMode): Promise<LineageConsumer> {
  const received: ReceivedEvent[] = [];
  const open = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks);
      const body = request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      if (mode.answer === 'never') {
        open.add(response);
        return;
      }
      if (mode.answer === 'status') {
        response.writeHead(mode.status, { 'content-type': 'application/json' }).end(mode.body ?? '{"error":"not taken"}');
        return;
      }
      if (mode.apiKey !== undefined && request.headers.authorization !== `Bearer ${mode.apiKey}`) {
        response.writeHead(401).end();
        return;
      }
      received.push({ path: request.url ?? '', headers: request.headers, event: JSON.parse(body.toString('utf8')) as Record<string, unknown> });
      response.writeHead(201).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    hanging: () => open.size,
    close: async () => {
      for (const response of open) response.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** A loopback URL nothing listens on: connections are refused. */
export async function refusingUrl(): Promise<string> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return `http://127.0.0.1:${port}`;
}
