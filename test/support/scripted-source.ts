import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ScriptedAnswer {
  status: number;
  body: string;
  contentType?: string;
}

/**
 * A source that answers whatever a test scripts, for responses the faithful sandbox would never
 * give (broken shapes, wrong counts). The token endpoint answers `token` (default: a valid one).
 */
export async function startScriptedSource(script: {
  token?: ScriptedAnswer;
  page: (pageNumber: number) => ScriptedAnswer;
}): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const answer = req.url?.startsWith('/oauth/token')
        ? (script.token ?? { status: 200, body: JSON.stringify({ access_token: 'scripted-token', token_type: 'Bearer', expires_in: 60 }) })
        : script.page((JSON.parse(raw) as { options: { pageNumber: number } }).options.pageNumber);
      res.writeHead(answer.status, { 'content-type': answer.contentType ?? 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A well-formed Export result page, to be broken by a test. */
export function exportPage(
  rows: unknown[],
  navigation: Partial<{ hasPrev: boolean; hasNext: boolean; rowsCount: number; totalRows: number }> = {},
  extra: Record<string, unknown> = {},
) {
  return {
    ok: true,
    result: {
      navigation: { hasPrev: false, hasNext: false, rowsCount: rows.length, totalRows: rows.length, ...navigation },
      headers: ['Type', 'Incidents'],
      dataTypes: ['text', 'number'],
      rows,
      ...extra,
    },
  };
}
