// A CSV job into gs:// (fake-gcs-server) traced into the real OpenTelemetry Collector: the publish
// span names the object's new generation, as the bucket holds it.
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { otelcolBinaryOrSkip, startCollector, type RunningCollector } from '../support/otel-collector.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { itUnless, missing } from '../support/skip.js';

const otelcol = otelcolBinaryOrSkip();

describeWithFakeGcs('a gs:// CSV tile traced into a real OpenTelemetry Collector', (gcs) => {
  const fixture = sandboxAndRootForAll({ incidents: 150 });
  let collector: RunningCollector | undefined;

  beforeAll(async () => {
    if (otelcol !== null) collector = await startCollector(otelcol);
  }, 60_000);
  afterAll(async () => {
    await collector?.stop();
  });

  itUnless(missing('the OpenTelemetry Collector', otelcol))(
    "the publish span names the object's new generation",
    async () => {
      const bucket = await gcs.newBucket('otel');
      const workspace = await writeWorkspace(
        path.join(fixture.root, 'gcs'),
        fixture.sandbox,
        [{ name: 'detail_gcs', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', path: `gs://${bucket}/{name}.csv` }] }],
        { itemsPerPage: 40 },
      );
      const runId = `otel-gcs-${process.pid}`;
      const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId], {
        env: { ...sandboxEnv(fixture.sandbox), STORAGE_EMULATOR_HOST: gcs.origin, OTEL_EXPORTER_OTLP_ENDPOINT: collector!.endpoint },
        timeoutMs: 60_000,
      });
      expect(result.code, result.stderr).toBe(0);
      const publish = await collector!.until(({ spans }) =>
        spans.find((span) => span.resource['tilehouse.run_id'] === runId && span.name === 'tilehouse.sink.publish'),
      );
      const [metadata] = await gcs.storage.bucket(bucket).file('detail_gcs.csv').getMetadata();
      expect(publish.attributes).toMatchObject({
        'tilehouse.sink.kind': 'csv',
        'tilehouse.sink.target': `gs://${bucket}/detail_gcs.csv`,
        'tilehouse.rows': 150,
        'tilehouse.sink.generation': String(metadata.generation),
      });
    },
    90_000,
  );
});
