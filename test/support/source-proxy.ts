import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An Export result as the proxy hands it to a test to change. */
export interface ExportResult {
  navigation: { hasPrev: boolean; hasNext: boolean; rowsCount: number; totalRows: number };
  headers: string[];
  rows: unknown[][];
  [key: string]: unknown;
}

export interface SourceProxyOptions {
  /**
   * The `Date` of the token answer: 'absent' sends none (node:http would add one), a string is sent
   * as it is, undefined passes the source's own.
   */
  tokenDate?: 'absent' | string;
  /** Changes each export page's rows before it is passed on (navigation is recomputed for a single page). */
  rows?: (rows: unknown[][], headers: string[]) => unknown[][];
}

/**
 * A loopback proxy in front of the sandbox that misbehaves in exactly one way a test picks: a
 * token answer without a (parseable) `Date`, or pages without some rows (rows that have not
 * arrived at the source yet, a day without incidents). Everything else is the sandbox's answer.
 * `rows` assumes one page per result (a test sets itemsPerPage above the rows it reads).
 */
export async function startSourceProxy(
  target: string,
  options: SourceProxyOptions,
): Promise<{ url: string; settings: SourceProxyOptions; close(): Promise<void> }> {
  const settings = { ...options };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      void (async () => {
        const headers: Record<string, string> = {};
        for (const name of ['authorization', 'content-type']) if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
        const answer = await fetch(`${target}${req.url ?? '/'}`, { method: req.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined });
        let body = await answer.text();
        const isToken = req.url?.startsWith('/oauth/token') ?? false;
        if (!isToken && answer.ok && settings.rows !== undefined) {
          const page = JSON.parse(body) as { result: ExportResult };
          const rows = settings.rows(page.result.rows, page.result.headers);
          page.result = { ...page.result, rows, navigation: { ...page.result.navigation, hasNext: false, rowsCount: rows.length, totalRows: rows.length } };
          body = JSON.stringify(page);
        }
        const out: Record<string, string> = { 'content-type': answer.headers.get('content-type') ?? 'application/json' };
        const date = answer.headers.get('date');
        if (isToken && settings.tokenDate === 'absent') res.sendDate = false;
        else if (isToken && settings.tokenDate !== undefined) out.date = settings.tokenDate;
        else if (date !== null) out.date = date;
        res.writeHead(answer.status, out);
        res.end(body);
      })().catch((error: unknown) => {
        res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    settings,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
