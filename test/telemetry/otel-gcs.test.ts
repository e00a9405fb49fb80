// A CSV job into gs:// (fake-gcs-server) traced into the real OpenTelemetry Collector: the publish
// span names the object's new generation, as the bucket holds it.
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { otelcolBinaryOrSkip, startCollector, type RunningCollector } from '../support/otel-collector.js';
import { detailQuery } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';

const otelcol = otelcolBinaryOrSkip();

describeWithFakeGcs('a gs:// CSV tile traced into a real OpenTelemetry Collector', (gcs) => {
  let sandbox: Sandbox;
  let collector: RunningCollector | undefined;
  let root: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 150 });
    if (otelcol !== null) collector = await startCollector(otelcol);
    root = await makeTempDir();
  }, 60_000);
  afterAll(async () => {
    await collector?.stop();
    await sandbox?.close();
    await rm(root, { recursive: true, force: true });
  });

  it.skipIf(otelcol === null)(
    "the publish span names the object's new generation",
    async () => {
      const bucket = await gcs.newBucket('otel');
      const workspace = await writeWorkspace(
        path.join(root, 'gcs'),
        sandbox,
        [{ name: 'detail_gcs', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv', path: `gs://${bucket}/{name}.csv` }] }],
        { itemsPerPage: 40 },
      );
      const runId = `otel-gcs-${process.pid}`;
      const result = await spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--run-id', runId], {
        env: { ...sandboxEnv(sandbox), STORAGE_EMULATOR_HOST: gcs.origin, OTEL_EXPORTER_OTLP_ENDPOINT: collector!.endpoint },
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
