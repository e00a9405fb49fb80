// The conformance scenarios (scenarios.ts) for the bigquery kind on the emulator (behind the
// copy-job proxy: the emulator has no copy jobs, a publish needs them). The table's fields are
// read back with the client's own tables.get.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { describeWithEmulator, uniqueDatasetId } from '../../support/bigquery-emulator.js';
import { copyJobProxyForAll } from '../../support/bigquery-runs.js';
import { type ConformanceBackend, conformanceScenarios } from './scenarios.js';

describeWithEmulator('the sink contract on BigQuery', (endpoint) => {
  const proxy = copyJobProxyForAll(endpoint);
  const dataset = uniqueDatasetId('conformance');
  const backend: ConformanceBackend = {
    kind: 'bigquery',
    name: 'the emulator',
    sink: () => ({ type: 'bigquery', writeMode: 'replace' }),
    async configure(workspace) {
      const environment = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> } & Record<string, unknown>;
      environment.sinks.bigquery = { location: 'US', projectId: endpoint.projectId, dataset };
      environment.tempDirectory = path.join(workspace.root, 'tmp');
      await writeFile(workspace.configFile, stringify(environment));
      return {};
    },
    seams: () => ({ sinkOptions: { bigqueryClient: proxy.client } }),
    async storedColumns(target) {
      const [, datasetId, tableId] = target.split('.');
      const [metadata] = await proxy.client.dataset(datasetId!).table(tableId!).getMetadata();
      return (metadata.schema.fields as Array<{ name: string; type: string }>).map(({ name, type }) => ({ name, type }));
    },
    async contents(target) {
      const [rows] = await proxy.client.query({ query: `SELECT * FROM \`${target}\` ORDER BY number` });
      return JSON.stringify(rows);
    },
    losePermission: { cannot: 'the BigQuery emulator has no IAM: every identity may do everything' },
  };
  conformanceScenarios(backend);
});
