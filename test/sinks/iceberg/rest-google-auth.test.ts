import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { openRestCatalog } from '../../../src/sinks/iceberg/rest-catalog.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { type BearerProxy, googleError, startBearerProxy } from '../../support/bearer-proxy.js';
import { type FakeMetadataServer, startFakeMetadataServer, TEST_SERVICE_ACCOUNT } from '../../support/fake-metadata-server.js';
import { TokenBook } from '../../support/google-token-book.js';
import { icebergPythonOrSkip } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { describeUnless, missing } from '../../support/skip.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();

const USER_PROJECT = 'lake-billing-7';
const GOOGLE = { type: 'google', userProject: USER_PROJECT, credentialsWaitMs: 5_000 } as const;

/**
 * google-auth-library finds the metadata server through GCE_METADATA_HOST in process.env (as
 * Workload Identity's is found on GKE): set for each test, restored after.
 */
const NAMES = [
  'GCE_METADATA_HOST',
  'GCE_METADATA_IP',
  'METADATA_SERVER_DETECTION',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'CLOUDSDK_CONFIG',
  'GOOGLE_CLOUD_PROJECT',
] as const;
const saved = Object.fromEntries(NAMES.map((name) => [name, process.env[name]]));

/**
 * The REST catalog behind Google credentials, as BigLake metastore's Iceberg REST catalog takes
 * them: a proxy that lets through only tokens the (fake) metadata server issued and that have not
 * expired or been revoked (bearer-proxy.ts, 401 otherwise), in front of the Apache Iceberg REST
 * server; tilehouse's tokens come from Application Default Credentials, i.e. the metadata server.
 */
describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python))(
  'the REST catalog with Google credentials (Apache Iceberg REST server behind a Google token check)',
  () => {
    let rest: RunningIcebergRest | undefined;
    let proxy: BearerProxy;
    let metadata: FakeMetadataServer | undefined;
    let gcloud: string;
    const book = new TokenBook();

    beforeAll(async () => {
      gcloud = await mkdtemp(join(tmpdir(), 'tilehouse-gcloud-'));
      rest = await startIcebergRest(lib!);
      proxy = await startBearerProxy(rest.uri, book);
    }, 180_000);
    afterEach(async () => {
      proxy.setFault(undefined);
      proxy.setDelayMs(0);
      await metadata?.close();
      metadata = undefined;
      for (const name of NAMES) {
        if (saved[name] === undefined) delete process.env[name];
        else process.env[name] = saved[name];
      }
      const { gcpMetadata } = await import('google-auth-library');
      gcpMetadata.resetIsAvailableCache();
    });
    afterAll(async () => {
      await proxy?.close();
      await rest?.stop();
      await rm(gcloud, { recursive: true, force: true });
    });

    /** Workload Identity as a pod on GKE sees it: a metadata server, no key file, no gcloud login. */
    async function useMetadata(tokenLifetimeSeconds: number): Promise<FakeMetadataServer> {
      metadata = await startFakeMetadataServer({ book, tokenLifetimeSeconds });
      for (const name of NAMES) delete process.env[name];
      process.env.GCE_METADATA_HOST = metadata.host;
      process.env.CLOUDSDK_CONFIG = gcloud;
      // Without a project the library asks `gcloud config config-helper` first (seconds): not the point here.
      process.env.GOOGLE_CLOUD_PROJECT = 'test-project';
      return metadata;
    }

    it('sends the metadata server’s tokens with x-goog-user-project on every request, renewed as they expire during the run, and the table lands for pyiceberg and DuckDB', async () => {
      const server = await useMetadata(2);
      // Each request takes 400 ms: the run outlives the 2 s tokens.
      proxy.setDelayMs(400);
      const before = proxy.requests.length;
      const issuedBefore = book.issued.length;
      const catalog = await openRestCatalog({ uri: proxy.origin, auth: GOOGLE });
      const first = rowsOf(0, 6);
      const second = rowsOf(20, 4);
      const table = { namespace: 'lake', name: 'google' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [first], mode: 'append', runId: 'google-1' });
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [second], mode: 'append', runId: 'google-2' });
      expect(await catalog.checkPrivileges!()).toBe(
        `requests carry Google tokens of service account ${TEST_SERVICE_ACCOUNT}, billed to project ${USER_PROJECT}; the catalog answered GET /v1/config with them`,
      );

      const sent = proxy.requests.slice(before);
      expect(sent.length).toBeGreaterThan(6);
      expect(sent.filter((request) => request.verdict !== 'valid' || (request.status !== 200 && request.status !== 404))).toEqual([]);
      expect(sent.filter((request) => request.userProject !== USER_PROJECT)).toEqual([]);
      // Tokens were renewed during the run: more than one was sent, each issued by the metadata server, none after it expired.
      const used = new Set(sent.map((request) => request.token));
      expect(used.size).toBeGreaterThan(1);
      expect([...used].every((token) => book.issued.some((issued) => issued.token === token && issued.issuer === 'metadata'))).toBe(true);
      expect(book.issued.length - issuedBefore).toBeGreaterThan(1);
      expect(server.requests.every((request) => request.flavored)).toBe(true);

      const { pyiceberg, duckdb } = await readBoth(python!, { catalog: { type: 'rest', uri: rest!.uri }, table: 'lake.google' });
      const expected = sortedLines([...first, ...second].map(asText));
      const withoutLineage = (rows: (string | null)[][]) => sortedLines(rows.map((row) => row.slice(0, COLUMNS.length)));
      expect(withoutLineage(pyiceberg.rows)).toEqual(expected);
      expect(withoutLineage(duckdb.rows)).toEqual(expected);
    }, 240_000);

    it('a token the catalog revokes gets one 401, then the same request with a fresh token', async () => {
      await useMetadata(3600);
      const catalog = await openRestCatalog({ uri: proxy.origin, auth: GOOGLE });
      const table = { namespace: 'lake', name: 'revoked' };
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'replace', runId: 'revoke-1' });
      const revoked = proxy.requests.at(-1)!.token!;
      book.revoke(revoked);
      const before = proxy.requests.length;
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(5, 2)], mode: 'replace', runId: 'revoke-2' });
      const after = proxy.requests.slice(before);
      expect(after[0]).toMatchObject({ verdict: 'revoked', status: 401, token: revoked, userProject: USER_PROJECT });
      expect(after.slice(1).length).toBeGreaterThan(1);
      expect(after.slice(1).every((request) => request.verdict === 'valid' && request.token !== revoked && request.userProject === USER_PROJECT)).toBe(true);
      expect(after[1]).toMatchObject({ method: after[0]!.method, path: after[0]!.path });
    });

    it('a catalog that refuses the fresh token as well fails with iceberg_catalog_auth_failed, without the token', async () => {
      await useMetadata(3600);
      proxy.setFault((_request, response) => googleError(response, 401, 'authError', 'Request had invalid authentication credentials.'));
      const before = proxy.requests.length;
      const failure = (await openRestCatalog({ uri: proxy.origin, auth: GOOGLE }).catch((error: unknown) => error)) as Error & Record<string, unknown>;
      expect(failure).toMatchObject({ code: 'iceberg_catalog_auth_failed', catalog: proxy.origin, status: 401 });
      expect(failure.message).toBe(
        `Iceberg REST catalog ${proxy.origin}: GET /v1/config was refused (401): error: Request had invalid authentication credentials.; the catalog does not accept the credentials`,
      );
      const sent = proxy.requests.slice(before);
      expect(sent.map((request) => request.status)).toEqual([401, 401]);
      for (const request of sent) expect(`${failure.message}\n${failure.stack}`).not.toContain(request.token);
    });
  },
);
