import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback proxy in front of the BigQuery emulator (or the copy-job proxy) that fails requests
 * the way BigQuery and its network can and the emulator never does: an answer that never comes,
 * an answer rewritten (a job still RUNNING, a job that ended with an error). Everything else is
 * forwarded unchanged, and every request line is recorded.
 */
export interface BigQueryRequest {
  method: string;
  path: string;
  /** The parsed JSON body of a plain JSON request (jobs.insert of a copy or query), else undefined. */
  json: unknown;
}

/** What to do with one request: forward it, hold it (never answer), or answer it here. */
export type FaultDecision =
  | { action: 'forward'; rewrite?: (answer: { status: number; body: unknown }) => { status: number; body: unknown } }
  | { action: 'hold' }
  | { action: 'answer'; status: number; body: unknown };

export interface BigQueryFaultProxy {
  apiEndpoint: string;
  seen: BigQueryRequest[];
  /** Requests held unanswered so far. */
  held: BigQueryRequest[];
  close(): Promise<void>;
}

// Headers of one connection, not of the request; fetch refuses some of them (transfer-encoding).
const HOP_BY_HOP = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

export async function startBigQueryFaultProxy(
  upstream: string,
  decide: (request: BigQueryRequest) => FaultDecision | Promise<FaultDecision>,
): Promise<BigQueryFaultProxy> {
  const seen: BigQueryRequest[] = [];
  const held: BigQueryRequest[] = [];
  const server = createServer((incoming, response) => {
    void handle(incoming, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
      response.end(String(error));
    });
  });

  async function handle(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = Buffer.concat(await incoming.toArray());
    const path = incoming.url ?? '/';
    let json: unknown;
    if ((incoming.headers['content-type'] ?? '').startsWith('application/json') && body.length > 0) {
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
    }
    const request: BigQueryRequest = { method: incoming.method ?? 'GET', path, json };
    seen.push(request);
    const decision = await decide(request);
    if (decision.action === 'hold') {
      held.push(request);
      return;
    }
    if (decision.action === 'answer') {
      response.writeHead(decision.status, { 'content-type': 'application/json' }).end(JSON.stringify(decision.body));
      return;
    }
    const headers = Object.fromEntries(
      Object.entries(incoming.headers).filter(([name, value]) => typeof value === 'string' && !HOP_BY_HOP.has(name)),
    ) as Record<string, string>;
    const answer = await fetch(`${upstream}${path}`, { method: request.method, headers, ...(body.length > 0 ? { body } : {}) });
    const text = Buffer.from(await answer.arrayBuffer());
    if (decision.rewrite === undefined) {
      // No content type invented: the client parses an empty 204 (tables.delete) that claims JSON.
      const type = answer.headers.get('content-type');
      response.writeHead(answer.status, type === null ? {} : { 'content-type': type }).end(text);
      return;
    }
    const rewritten = decision.rewrite({ status: answer.status, body: text.length > 0 ? JSON.parse(text.toString('utf8')) : {} });
    response.writeHead(rewritten.status, { 'content-type': 'application/json' }).end(JSON.stringify(rewritten.body));
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    apiEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    held,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The job id a jobs.get / jobs.cancel path names, or undefined for any other request. */
export function jobIdOfPath(path: string): string | undefined {
  const match = /\/bigquery\/v2\/projects\/[^/]+\/jobs\/([^/?]+)(\/cancel)?/.exec(path);
  return match ? decodeURIComponent(match[1]!) : undefined;
}
