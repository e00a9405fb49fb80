import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openRestCatalog } from '../../../src/sinks/iceberg/rest-catalog.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { type BearerProxy, startBearerProxy } from '../../support/bearer-proxy.js';
import { type ClientCredentialsServer, startClientCredentialsServer } from '../../support/client-credentials-server.js';
import { TokenBook } from '../../support/google-token-book.js';
import { icebergPythonOrSkip } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { describeUnless, missing } from '../../support/skip.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();

/**
 * A catalog whose `/v1/config` answers a `prefix` for one warehouse (as Polaris answers the
 * catalog's name): `/v1/<prefix>/…` is forwarded as `/v1/…` to the server, which has no prefix.
 */
async function startPrefixProxy(upstream: string, warehouse: string, prefix: string): Promise<{ origin: string; paths: string[]; close(): Promise<void> }> {
  const target = new URL(upstream);
  const paths: string[] = [];
  const server: Server = createServer((incoming, response) => {
    const url = incoming.url ?? '/';
    paths.push(`${incoming.method} ${url}`);
    if (url.startsWith('/v1/config')) {
      const asked = new URL(url, 'http://proxy').searchParams.get('warehouse');
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ defaults: {}, overrides: asked === warehouse ? { prefix } : {} }));
      incoming.resume();
      return;
    }
    const path = url.replace(`/v1/${prefix}/`, '/v1/');
    const forwarded = request({ host: target.hostname, port: target.port, method: incoming.method, path, headers: incoming.headers }, (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    forwarded.on('error', () => response.destroy());
    incoming.pipe(forwarded);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
const python = icebergPythonOrSkip();

const CLIENT_ID = 'tilehouse-loader';
const CLIENT_SECRET = 'polaris-secret-7f3c9a1e5d';
const READS_TIMEOUT_MS = 240_000;

/**
 * The REST catalog behind credentials, as Apache Polaris / Snowflake Open Catalog serve it: a
 * token endpoint taking client credentials (client-credentials-server.ts) in front of a proxy that
 * lets through only the tokens it gave out and answers 401 to any other (bearer-proxy.ts), in front
 * of the Apache Iceberg REST server.
 */
describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python))(
  'the REST catalog with OAuth2 client credentials or a bearer token (Apache Iceberg REST server behind a token check)',
  () => {
    let rest: RunningIcebergRest | undefined;
    let proxy: BearerProxy;
    let front: ClientCredentialsServer;
    const book = new TokenBook();
    beforeAll(async () => {
      rest = await startIcebergRest(lib!);
      proxy = await startBearerProxy(rest.uri, book);
      front = await startClientCredentialsServer({ upstream: proxy.origin, book, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
    }, 180_000);
    afterAll(async () => {
      await front?.close();
      await proxy?.close();
      await rest?.stop();
    });

    it(
      'obtains a token with the client credentials, sends it as Bearer on every request, and the run lands for pyiceberg and DuckDB',
      async () => {
        const grantsBefore = front.grants.length;
        const requestsBefore = proxy.requests.length;
        const catalog = await openRestCatalog({ uri: front.origin, auth: { type: 'oauth2', clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } });
        const rows = rowsOf(0, 8);
        const result = await writeIcebergRun({
          catalog,
          table: { namespace: 'auth', name: 'oauth' },
          columns: COLUMNS,
          rows: [rows],
          mode: 'replace',
          runId: 'oauth-1',
        });
        expect(result.committed).toBe(true);
        expect(front.grants.slice(grantsBefore)).toEqual([
          {
            fields: { grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: '(matched)', scope: 'PRINCIPAL_ROLE:ALL' },
            contentType: 'application/x-www-form-urlencoded',
            status: 200,
          },
        ]);
        const sent = proxy.requests.slice(requestsBefore);
        expect(sent.map((request) => `${request.method} ${request.path.split('?')[0]}`)).toContain('POST /v1/namespaces/auth/tables/oauth');
        expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);
        expect(new Set(sent.map((request) => request.token)).size).toBe(1);
        const { pyiceberg, duckdb } = await readBoth(python!, { catalog: { type: 'rest', uri: rest!.uri }, table: 'auth.oauth' });
        expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(rows.map(asText)));
        expect(sortedLines(duckdb.rows)).toEqual(sortedLines(rows.map(asText)));
      },
      READS_TIMEOUT_MS,
    );

    it('asks for a new token before the last one expires, and once more when the catalog answers 401 to a revoked one', async () => {
      let clock = 1_000_000;
      front.lifetimeSeconds = 100;
      const grantsBefore = front.grants.length;
      const catalog = await openRestCatalog({
        uri: front.origin,
        auth: { type: 'oauth2', clientId: CLIENT_ID, clientSecret: CLIENT_SECRET },
        now: () => clock,
      });
      const table = { namespace: 'auth', name: 'refreshed' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'replace', runId: 'refresh-1' });
      expect(front.grants.length - grantsBefore).toBe(1);
      const first = proxy.requests.at(-1)!.token;

      // 95 s on: within the last tenth of the token's 100 s, the next request goes with a new one.
      clock += 95_000;
      await catalog.loadTable(table);
      expect(front.grants.length - grantsBefore).toBe(2);
      const second = proxy.requests.at(-1)!;
      expect(second).toMatchObject({ verdict: 'valid', status: 200 });
      expect(second.token).not.toBe(first);

      // Revoked by the catalog before its time: the 401 is answered with one more token and the same request.
      book.revoke(second.token!);
      const requestsBefore = proxy.requests.length;
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(10, 2)], mode: 'replace', runId: 'refresh-2' });
      expect(front.grants.length - grantsBefore).toBe(3);
      const after = proxy.requests.slice(requestsBefore);
      expect(after[0]).toMatchObject({ verdict: 'revoked', status: 401 });
      expect(after.slice(1).every((request) => request.verdict === 'valid' && request.token !== second.token)).toBe(true);
      front.lifetimeSeconds = 3600;
    }, 60_000);

    it('a wrong client secret fails with iceberg_catalog_auth_failed naming the catalog and the client, never the secret', async () => {
      const wrong = 'not-the-polaris-secret-42';
      const failure = await openRestCatalog({ uri: front.origin, auth: { type: 'oauth2', clientId: CLIENT_ID, clientSecret: wrong } }).catch(
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ code: 'iceberg_catalog_auth_failed', catalog: front.origin, status: 401 });
      const message = (failure as Error).message;
      expect(message).toContain(`${front.origin}/v1/oauth/tokens`);
      expect(message).toContain('invalid_client');
      expect(message).toContain(CLIENT_ID);
      expect(`${message}\n${(failure as Error).stack}`).not.toContain(wrong);
      expect(front.grants.at(-1)?.fields.client_secret).toBe('(wrong)');
    });

    it('a bearer token is sent as it is; one the catalog refuses fails with iceberg_catalog_auth_failed, without the token, and is not retried', async () => {
      const issued = book.issue('given', 3600).token;
      const catalog = await openRestCatalog({ uri: front.origin, auth: { type: 'bearer', token: issued } });
      await writeIcebergRun({
        catalog,
        table: { namespace: 'auth', name: 'bearer' },
        columns: COLUMNS,
        rows: [rowsOf(0, 1)],
        mode: 'replace',
        runId: 'bearer-1',
      });
      expect(proxy.requests.at(-1)).toMatchObject({ token: issued, verdict: 'valid' });

      const grantsBefore = front.grants.length;
      const requestsBefore = proxy.requests.length;
      const unknown = 'ya29.never-issued-token-value';
      const failure = await openRestCatalog({ uri: front.origin, token: unknown }).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: 'iceberg_catalog_auth_failed', catalog: front.origin, status: 401 });
      expect((failure as Error).message).toContain('GET /v1/config');
      expect(`${(failure as Error).message}\n${(failure as Error).stack}`).not.toContain(unknown);
      expect(proxy.requests.length - requestsBefore).toBe(1);
      expect(front.grants.length).toBe(grantsBefore);
    });

    it('takes its token from another endpoint (oauth2-server-uri), and puts the prefix /v1/config answers for the warehouse before every path', async () => {
      const prefixed = await startPrefixProxy(proxy.origin, 'lake', 'lake-7');
      try {
        const grantsBefore = front.grants.length;
        const requestsBefore = proxy.requests.length;
        const catalog = await openRestCatalog({
          uri: prefixed.origin,
          warehouse: 'lake',
          auth: { type: 'oauth2', clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, scope: 'catalog', serverUri: `${front.origin}/v1/oauth/tokens` },
        });
        await writeIcebergRun({
          catalog,
          table: { namespace: 'auth', name: 'prefixed' },
          columns: COLUMNS,
          rows: [rowsOf(0, 3)],
          mode: 'replace',
          runId: 'prefix-1',
        });
        expect(front.grants.slice(grantsBefore).map((grant) => grant.fields.scope)).toEqual(['catalog']);
        expect(prefixed.paths[0]).toBe('GET /v1/config?warehouse=lake');
        expect(prefixed.paths.slice(1).length).toBeGreaterThan(2);
        expect(prefixed.paths.slice(1).every((path) => path.split(' ')[1]!.startsWith('/v1/lake-7/namespaces'))).toBe(true);
        expect(proxy.requests.slice(requestsBefore).every((request) => request.verdict === 'valid')).toBe(true);
      } finally {
        await prefixed.close();
      }
    });
  },
);
