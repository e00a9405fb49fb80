// The span tree of a two-tile run with a CSV and a BigQuery sink each (the emulator, behind the
// proxy that adds copy jobs), as the real OpenTelemetry Collector received it: the BigQuery
// publish span names its load and copy jobs.
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { otelcolBinaryOrSkip, startCollector, type RunningCollector } from '../support/otel-collector.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { itUnless, missing } from '../support/skip.js';

const otelcol = otelcolBinaryOrSkip();

describeWithEmulator('a CSV and a BigQuery tile traced into a real OpenTelemetry Collector', (endpoint) => {
  const fixture = sandboxAndRootForAll({ incidents: 150 });
  let proxy: EmulatorWithCopyJobs;
  let collector: RunningCollector | undefined;

  beforeAll(async () => {
    proxy = await startEmulatorWithCopyJobs(endpoint);
    if (otelcol !== null) collector = await startCollector(otelcol);
  }, 60_000);
  afterAll(async () => {
    await collector?.stop();
    await proxy?.close();
  });

  itUnless(missing('the OpenTelemetry Collector', otelcol))(
    'run → tile → token, pages, prepare, publish; the BigQuery publish names its load and copy jobs',
    async () => {
      const dataset = uniqueDatasetId('otel');
      const jobs = [
        { name: 'detail_csv', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
        { name: 'detail_bq', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'bigquery' }] },
      ];
      const workspace = await writeBigQueryWorkspace(
        path.join(fixture.root, 'tree'),
        fixture.sandbox,
        jobs,
        { projectId: proxy.endpoint.projectId, dataset },
        { itemsPerPage: 40 },
      );
      const runId = `otel-bq-${process.pid}`;
      const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId, '--json'], {
        env: { ...sandboxEnv(fixture.sandbox), BIGQUERY_EMULATOR_HOST: proxy.endpoint.apiEndpoint, OTEL_EXPORTER_OTLP_ENDPOINT: collector!.endpoint },
        timeoutMs: 120_000,
      });
      expect(result.code, result.stderr).toBe(0);
      const summary = summaryOf(result.stdout, 'run');
      const spans = await collector!.until(({ spans }) => {
        const mine = spans.filter((span) => span.resource['tilehouse.run_id'] === runId);
        return mine.some((span) => span.name === 'tilehouse.run') ? mine : undefined;
      });
      const run = spans.find((span) => span.name === 'tilehouse.run')!;
      const tiles = spans.filter((span) => span.name === 'tilehouse.tile');
      expect(tiles.map((tile) => tile.parentSpanId)).toEqual([run.spanId, run.spanId]);
      const childNames = (job: string) => {
        const tile = tiles.find((candidate) => candidate.attributes['tilehouse.job'] === job)!;
        return [...new Set(spans.filter((span) => span.parentSpanId === tile.spanId).map((span) => span.name))].sort();
      };
      // One token for the run: under whichever tile asked first.
      const withToken = ['tilehouse.page', 'tilehouse.sink.prepare', 'tilehouse.sink.publish', 'tilehouse.token'];
      const withoutToken = withToken.filter((name) => name !== 'tilehouse.token');
      expect([childNames('detail_csv'), childNames('detail_bq')]).toContainEqual(withToken);
      expect([childNames('detail_csv'), childNames('detail_bq')]).toContainEqual(withoutToken);

      const bigquery = summary.tiles.find((tile) => tile.job === 'detail_bq')!.outputs[0]!;
      const publish = spans.find((span) => span.name === 'tilehouse.sink.publish' && span.attributes['tilehouse.sink.kind'] === 'bigquery')!;
      expect(publish.attributes).toMatchObject({
        'tilehouse.sink.target': bigquery.target,
        'tilehouse.rows': 150,
        'tilehouse.sink.loadJobId': bigquery.details!.loadJobId,
        'tilehouse.sink.jobId': bigquery.details!.jobId,
      });
      expect(String(publish.attributes['tilehouse.sink.loadJobId'])).not.toBe('');
      const prepare = spans.find((span) => span.name === 'tilehouse.sink.prepare' && span.attributes['tilehouse.sink.target'] === bigquery.target);
      expect(prepare?.status.code).not.toBe(2);
    },
    150_000,
  );
});
