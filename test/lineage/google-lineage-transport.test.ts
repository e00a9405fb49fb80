import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineageSchema } from '../../src/config/lineage-schema.js';
import { GOOGLE_LINEAGE_MAX_BYTES, googleLineageBody } from '../../src/lineage/google-lineage-transport.js';
import { lineage } from '../../src/lineage/lineage.js';
import { closeLineage, openLineage } from '../../src/lineage/open-lineage.js';
import { createLogger } from '../../src/log.js';
import { Capture } from '../support/cli-harness.js';
import { startFakeMetadataServer, type FakeMetadataServer } from '../support/fake-metadata-server.js';
import { TokenBook } from '../support/google-token-book.js';
import { openLineageProblems } from '../support/openlineage-schemas.js';

// The gcplineage transport against a fake Data Lineage API on loopback, with a token from a fake
// GKE metadata server (Workload Identity), as the BigQuery and Cloud Storage sinks get theirs.
// The fake answers as the API documents `projects.locations.processOpenLineageRunEvent`:
// POST https://datalineage.googleapis.com/v1/{parent}:processOpenLineageRunEvent, the OpenLineage
// RunEvent as the body, an optional requestId (at most 36 characters) for idempotency, answered
// with the process, run and lineage events it made; 401 without a valid OAuth token.
interface DataLineageCall {
  path: string;
  requestId: string | null;
  token: string;
  contentType: string | undefined;
  event: Record<string, unknown>;
}

const book = new TokenBook();
const calls: DataLineageCall[] = [];
const saved = { host: process.env.GCE_METADATA_HOST, project: process.env.GOOGLE_CLOUD_PROJECT };
let metadata: FakeMetadataServer;
let api: Server;
let apiEndpoint: string;

beforeAll(async () => {
  metadata = await startFakeMetadataServer({ book });
  process.env.GCE_METADATA_HOST = metadata.host;
  // As on GKE, where the metadata server names it: without one, google-auth-library asks gcloud.
  process.env.GOOGLE_CLOUD_PROJECT = 'test-project';
  api = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://api');
      const token = book.verdict(request.headers.authorization).verdict;
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      calls.push({ path: url.pathname, requestId: url.searchParams.get('requestId'), token, contentType: request.headers['content-type'], event });
      if (request.method !== 'POST' || token !== 'valid') {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"code":401,"status":"UNAUTHENTICATED"}}');
        return;
      }
      const parent = url.pathname.replace(/^\/v1\//, '').replace(/:processOpenLineageRunEvent$/, '');
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ process: `${parent}/processes/p1`, run: `${parent}/processes/p1/runs/r1`, lineageEvents: [] }));
    });
  });
  api.listen(0, '127.0.0.1');
  await once(api, 'listening');
  apiEndpoint = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});

afterAll(async () => {
  api.close();
  await metadata.close();
  for (const [name, value] of [
    ['GCE_METADATA_HOST', saved.host],
    ['GOOGLE_CLOUD_PROJECT', saved.project],
  ] as const) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe('the gcplineage transport', () => {
  it("sends each event to processOpenLineageRunEvent of the project and location with the process's Google token", async () => {
    const logs = new Capture();
    const section = lineageSchema.parse({ transport: { type: 'gcplineage', project_id: 'test-project', location: 'europe-west3', apiEndpoint } });
    const opened = await openLineage({ env: process.env, section, logger: createLogger({ destination: logs }), writeConsole: () => undefined });
    lineage()
      .startTile({
        job: 'incidents',
        tile: 't1',
        runId: '20261121T000000Z-abcdef',
        sourceUrl: 'https://acme.example.com',
        startedAt: new Date(),
        timezone: 'UTC',
      })
      .end(
        {
          status: 'succeeded',
          rows: 1,
          columns: [{ name: 'id', header: 'ID', type: 'INT64' }],
          outputs: [{ sink: 'bigquery', target: 'p.d.t', rows: 1 }],
          opened: [],
          bigqueryJobIds: [],
        },
        false,
      );
    await closeLineage(opened);
    expect(
      logs
        .lines()
        .filter((line) => line.level === 40)
        .map((line) => line.msg),
    ).toEqual([]);
    expect(calls.map(({ path, token, contentType, event }) => [path, token, contentType, event.eventType])).toEqual([
      ['/v1/projects/test-project/locations/europe-west3:processOpenLineageRunEvent', 'valid', 'application/json', 'START'],
      ['/v1/projects/test-project/locations/europe-west3:processOpenLineageRunEvent', 'valid', 'application/json', 'COMPLETE'],
    ]);
    for (const call of calls) {
      expect(call.requestId).toMatch(/^[0-9a-f]{32}$/);
      expect(openLineageProblems(call.event)).toEqual([]);
    }
    expect(calls[0]?.requestId).not.toBe(calls[1]?.requestId);
  });
});

describe('googleLineageBody', () => {
  const wide = (width: number) => ({
    eventType: 'COMPLETE',
    outputs: [
      {
        namespace: 'bigquery',
        name: 'p.d.t',
        facets: {
          schema: { fields: Array.from({ length: width }, (_, index) => ({ name: `column_${index}`, type: 'STRING' })) },
          columnLineage: {
            fields: Object.fromEntries(
              Array.from({ length: width }, (_, index) => [
                `column_${index}`,
                { inputFields: [{ namespace: 'https://a', name: 't', field: `Column ${index}`.repeat(4) }] },
              ]),
            ),
          },
        },
      },
    ],
  });

  it('sends an event within 5 MB as it is', () => {
    const event = wide(10);
    expect(JSON.parse(String(googleLineageBody(event)))).toEqual(event);
  });

  it("drops the per-column facets of an event over Google's 5 MB limit, and gives up on one still over it", () => {
    const body = googleLineageBody(wide(40_000));
    expect(body?.length).toBeLessThanOrEqual(GOOGLE_LINEAGE_MAX_BYTES);
    const facets = (JSON.parse(String(body)) as { outputs: Array<{ facets: Record<string, unknown> }> }).outputs[0]?.facets;
    expect(Object.keys(facets ?? {})).toEqual(['schema']);
    const hugeName = { ...wide(1), outputs: [{ namespace: 'bigquery', name: 'x'.repeat(GOOGLE_LINEAGE_MAX_BYTES), facets: {} }] };
    expect(googleLineageBody(hugeName)).toBeUndefined();
  });
});
