// An incremental job whose Parquet sink writes s3:// objects: what each day's target holds is read
// from the `<object>.manifest.json` objects the sink publishes, on moto. The sandbox's clock is
// moved from run to run (a sandbox per "day"), as in incremental-gcs.test.ts.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { type Sandbox } from '../../sandbox/index.js';
import { RUN_ID_METADATA_KEY } from '../../src/sinks/stores/s3/temp-keys.js';
import { runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { describeWithS3, getBytes, keysOf } from '../support/s3-server.js';
import { dailyIncrementalJob, daySandboxesForAll } from '../support/day-sandboxes.js';
import { duckdb, sqlString } from '../sinks/parquet/encoder/duckdb-read-back.js';

const sandboxes = daySandboxesForAll();

describeWithS3('an incremental job writing s3:// Parquet objects', (s3) => {
  async function run(sandbox: Sandbox, bucket: string, name: string) {
    const job = dailyIncrementalJob({ type: 'parquet', path: `s3://${bucket}/daily/{date}.parquet`, manifest: true });
    const workspace = await writeWorkspace(path.join(sandboxes.root, name), sandbox, [job]);
    const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks.s3 = { endpoint: s3.endpoint };
    await writeFile(workspace.configFile, stringify(config));
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--json'], { env: sandboxEnv(sandbox) });
    expect(result.exitCode, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'run');
    return summary.incremental![0]!;
  }

  const runIdOf = async (bucket: string, key: string) =>
    (await s3.client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).Metadata?.[RUN_ID_METADATA_KEY];

  it('exports days 1-5 as one object and manifest each, then only the open day 5 on a repeat; DuckDB reads every day', async () => {
    const bucket = await s3.newBucket('incremental');
    const day5 = await sandboxes.at('2026-07-05');
    const days = ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'];
    const first = await run(day5, bucket, 'first');
    expect(first.windows.map((window) => window.from)).toEqual(days);
    expect(await keysOf(s3.client, bucket)).toEqual(days.flatMap((day) => [`daily/${day}.parquet`, `daily/${day}.parquet.manifest.json`]));
    const manifests = await Promise.all(
      days.map(
        async (day) => JSON.parse((await getBytes(s3.client, bucket, `daily/${day}.parquet.manifest.json`)).toString()) as { window: { open: boolean } },
      ),
    );
    expect(manifests.map((manifest) => manifest.window.open)).toEqual([false, false, false, false, true]);
    for (const day of days) {
      const copy = path.join(sandboxes.root, `${day}.parquet`);
      await writeFile(copy, await getBytes(s3.client, bucket, `daily/${day}.parquet`));
      const reader = await (await duckdb()).runAndReadAll(`SELECT DISTINCT CAST(day AS VARCHAR) FROM read_parquet(${sqlString(copy)})`);
      expect(reader.getRows(), day).toEqual([[day]]);
    }
    const before = await Promise.all(days.map((day) => runIdOf(bucket, `daily/${day}.parquet`)));

    const repeat = await run(day5, bucket, 'repeat');
    expect(repeat).toMatchObject({ windows: [{ from: '2026-07-05', to: '2026-07-06' }], left: [] });
    const after = await Promise.all(days.map((day) => runIdOf(bucket, `daily/${day}.parquet`)));
    // The closed days' objects were not written again; the open day's was.
    expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
    expect(after[4]).not.toBe(before[4]);
  }, 120_000);
});
