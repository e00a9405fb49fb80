import { once } from 'node:events';
import { createServer, type IncomingMessage, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openRestCatalog } from '../../../src/sinks/iceberg/rest-catalog.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { describeUnless, missing } from '../../support/skip.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();

/** What the proxy does to the next commit (a POST to a table's path): pass it, lose its answer after the server applied it, or refuse it unseen. */
type CommitFault = 'pass' | 'lose-answer' | 'refuse-unsent';

/**
 * A proxy in front of the REST server that misbehaves on commits only: it answers 502 to the
 * writer either after forwarding the commit (the server applied it; the answer is lost) or
 * without forwarding it (nothing applied). Everything else passes through.
 */
async function startCommitProxy(upstream: string): Promise<{ origin: string; faults: CommitFault[]; commits: number; close(): Promise<void> }> {
  const target = new URL(upstream);
  const state = { faults: [] as CommitFault[], commits: 0 };
  const forward = (incoming: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }>((resolve, reject) => {
      const outgoing = httpRequest(
        { host: target.hostname, port: target.port, path: incoming.url, method: incoming.method, headers: incoming.headers },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
        },
      );
      outgoing.on('error', reject);
      outgoing.end(body);
    });
  const server: Server = createServer(async (incoming, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const isCommit = incoming.method === 'POST' && /\/namespaces\/[^/]+\/tables\/[^/]+$/.test(incoming.url ?? '');
    const fault = isCommit ? (state.faults.shift() ?? 'pass') : 'pass';
    if (isCommit) state.commits++;
    if (fault === 'refuse-unsent') {
      response.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway (commit not forwarded)');
      return;
    }
    const answer = await forward(incoming, body);
    if (fault === 'lose-answer') {
      response.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway (the answer was lost)');
      return;
    }
    const { 'transfer-encoding': _chunked, 'content-length': _length, ...headers } = answer.headers;
    response.writeHead(answer.status, headers).end(answer.body);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get faults() {
      return state.faults;
    },
    get commits() {
      return state.commits;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python))(
  "a REST commit whose answer is lost (Apache Iceberg REST server behind a proxy that loses commits' answers)",
  () => {
    let server: RunningIcebergRest | undefined;
    let proxy: Awaited<ReturnType<typeof startCommitProxy>>;
    beforeAll(async () => {
      server = await startIcebergRest(lib!);
      proxy = await startCommitProxy(server.uri);
    }, 180_000);
    afterAll(async () => {
      await proxy?.close();
      await server?.stop();
    });

    it('is judged by reading the table: applied once and reported committed, or sent again when it was not applied', async () => {
      const catalog = await openRestCatalog({ uri: proxy.origin });
      const pyCatalog = { catalog: { type: 'rest', uri: server!.uri }, table: 'faults.lost' };
      const table = { namespace: 'faults', name: 'lost' };
      const first = rowsOf(0, 6);
      proxy.faults.push('lose-answer');
      const landed = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [first], mode: 'replace', runId: 'lost-1' });
      expect(landed).toMatchObject({ committed: true, tries: 1 });
      expect(proxy.commits).toBe(1);

      const second = rowsOf(20, 3);
      proxy.faults.push('refuse-unsent');
      const resent = await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [second], mode: 'replace', runId: 'lost-2' });
      expect(resent).toMatchObject({ committed: true, tries: 2 });
      expect(proxy.commits).toBe(3);

      const history = await readIceberg(python!, 'pyiceberg-table', pyCatalog);
      expect(history.snapshots.map((s) => [s.id, s.summary['tilehouse.run-id']])).toEqual([
        [landed.snapshotId.toString(), 'lost-1'],
        [resent.snapshotId.toString(), 'lost-2'],
      ]);
      const { pyiceberg, duckdb } = await readBoth(python!, pyCatalog);
      expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(second.map(asText)));
      expect(sortedLines(duckdb.rows)).toEqual(sortedLines(second.map(asText)));
      await catalog.close();
    }, 240_000);
  },
);
