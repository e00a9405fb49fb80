import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { bigQueryRunsForAll } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { fileTransportEnv, lineageEventsIn } from '../support/lineage-events.js';
import { describeWithObjectStores } from '../support/object-stores.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

// Each sink kind's targets as OpenLineage datasets, named as the spec's naming page says, from a
// real run against each store: gs:// (fake-gcs-server), s3:// (moto), BigQuery (the emulator).
// The local CSV and Parquet files are test/lineage/run-lineage.test.ts's.
const INCIDENTS = 60;

describeWithObjectStores('the lineage of a tile into objects', (store) => {
  const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });

  it('names each object as <scheme>://<bucket> / its key, with its rows, bytes and one file', async () => {
    const bucket = await store.newBucket('lineage');
    const workspace = await writeWorkspace(
      path.join(fixture.root, `lineage-${store.scheme}`),
      fixture.sandbox,
      [
        {
          name: 'incidents',
          tile: SANDBOX_TILE,
          query: detailQuery,
          sinks: [
            { type: 'csv', path: `${store.scheme}://${bucket}/exports/incidents.csv` },
            { type: 'parquet', path: `${store.scheme}://${bucket}/exports/incidents.parquet` },
          ],
        },
      ],
      { itemsPerPage: 40 },
    );
    await store.configure(workspace.configFile);
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox), ...store.processEnv(), ...fileTransportEnv(workspace.root) },
      seams: store.seams(),
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const events = await lineageEventsIn(workspace.root);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'COMPLETE']);
    const complete = events[1]!;
    const csvBytes = (await store.bytes(bucket, 'exports/incidents.csv')).length;
    expect(complete.outputs.map(({ namespace, name, outputFacets }) => ({ namespace, name, statistics: outputFacets?.outputStatistics }))).toEqual([
      {
        namespace: `${store.scheme}://${bucket}`,
        name: 'exports/incidents.csv',
        statistics: expect.objectContaining({ rowCount: INCIDENTS, size: csvBytes, fileCount: 1 }),
      },
      {
        namespace: `${store.scheme}://${bucket}`,
        name: 'exports/incidents.parquet',
        statistics: expect.objectContaining({ rowCount: INCIDENTS, fileCount: 1 }),
      },
    ]);
    expect(complete.outputs[0]?.facets?.dataSource).toMatchObject({ name: `${store.scheme}://${bucket}`, uri: `${store.scheme}://${bucket}` });
    if (store.scheme === 'gs') {
      // Each object's new generation, as the bucket's own metadata (the run id it names) is not enough to find it.
      const generations = complete.run.facets.tilehouse?.objectGenerations as Array<{ target: string; generation: string }>;
      expect(generations.map((entry) => entry.target)).toEqual([`gs://${bucket}/exports/incidents.csv`, `gs://${bucket}/exports/incidents.parquet`]);
      for (const entry of generations) expect(entry.generation).toMatch(/^\d+$/);
    }
  }, 60_000);
});

describeWithEmulator('the lineage of a tile into BigQuery', (endpoint) => {
  const fixture = bigQueryRunsForAll(endpoint, { incidents: INCIDENTS });

  it('names the table as bigquery / project.dataset.table and its BigQuery jobs in tilehouse facet', async () => {
    const dataset = uniqueDatasetId('lineage');
    const workspace = await writeBigQueryWorkspace(
      path.join(fixture.root, 'lineage-bigquery'),
      fixture.sandbox,
      [{ name: 'incidents', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'bigquery', table: 'incidents' }] }],
      { projectId: endpoint.projectId, dataset },
      { itemsPerPage: 40 },
    );
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox), ...fileTransportEnv(workspace.root) },
      seams: { sinkOptions: { bigqueryClient: fixture.client } },
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const events = await lineageEventsIn(workspace.root);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'COMPLETE']);
    const complete = events[1]!;
    expect(complete.outputs.map(({ namespace, name, outputFacets }) => ({ namespace, name, rows: outputFacets?.outputStatistics?.rowCount }))).toEqual([
      { namespace: 'bigquery', name: `${endpoint.projectId}.${dataset}.incidents`, rows: INCIDENTS },
    ]);
    const summary = result.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<{ bigqueryJobIds: string[] }> } };
    const jobIds = summary.summary.tiles[0]!.bigqueryJobIds;
    expect(jobIds.length).toBeGreaterThan(0);
    expect(complete.run.facets.tilehouse?.bigqueryJobIds).toEqual(jobIds);
  }, 120_000);
});
