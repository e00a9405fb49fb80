import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQueryAbove } from '../support/queries.js';
import { describeWithS3, getBytes, keysOf } from '../support/s3-server.js';

// The publish guard of s3:// file targets (moto behind the test proxy): what an object holds is
// read from its manifest object, else from the object itself (CSV records; Parquet's footer); a
// refusal leaves every key byte-identical and no temp key or multipart upload behind.
const INCIDENTS = 200;

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });

describeWithS3('the publish guard of s3:// objects', (s3) => {
  const CASES = [
    { name: 'csv', sink: (bucket: string) => ({ type: 'csv', path: `s3://${bucket}/t/incidents.csv` }), readFrom: '(the CSV file counted)' },
    { name: 'csv_manifest', sink: (bucket: string) => ({ type: 'csv', path: `s3://${bucket}/t/incidents.csv`, manifest: true }), readFrom: '(its manifest)' },
    { name: 'parquet', sink: (bucket: string) => ({ type: 'parquet', path: `s3://${bucket}/t/incidents.parquet` }), readFrom: '(the Parquet file counted)' },
  ];

  for (const { name, sink, readFrom } of CASES) {
    it(`${name}: refuses no rows and a tenth, every key byte-identical and nothing left behind; --allow-shrink publishes; a modest shrink passes`, async () => {
      const bucket = await s3.newBucket(`guard-${name.replaceAll('_', '-')}`);
      const dir = path.join(fixture.root, name);
      const workspace = await writeWorkspace(dir, fixture.sandbox, [], { itemsPerPage: 50 });
      const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
      config.sinks.s3 = { endpoint: s3.endpoint, region: 'eu-west-1' };
      await writeFile(workspace.configFile, stringify(config));
      const run = async (above: number, flags: string[] = []) => {
        await writeFile(
          path.join(workspace.jobsDir, 'incidents.yaml'),
          stringify({ name: 'incidents', tile: SANDBOX_TILE, query: detailQueryAbove(above), sinks: [sink(bucket)] }),
        );
        const summaryFile = path.join(dir, 'summary.json');
        const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile, ...flags], {
          env: sandboxEnv(fixture.sandbox),
        });
        const tile = (
          JSON.parse(await readFile(summaryFile, 'utf8')) as {
            tiles: Array<Record<string, unknown> & { guard?: { verdicts: Array<{ rule?: string; reason: string }> } }>;
          }
        ).tiles[0]!;
        return { ...result, tile };
      };
      const objects = async () =>
        Promise.all((await keysOf(s3.client, bucket)).map(async (key) => [key, (await getBytes(s3.client, bucket, key)).toString('base64')] as const));

      const first = await run(0);
      expect(first.exitCode, first.stderr).toBe(0);
      const before = await objects();
      expect(before.map(([key]) => key)).toContain(`t/incidents.${name.startsWith('parquet') ? 'parquet' : 'csv'}`);
      const empty = await run(INCIDENTS);
      expect(empty.exitCode).toBe(1);
      expect(empty.tile).toMatchObject({ status: 'failed', error: { code: 'publish_guard_tripped' } });
      expect(empty.tile.guard!.verdicts[0]).toMatchObject({ rule: 'empty' });
      expect(empty.tile.guard!.verdicts[0]!.reason).toContain(`holds ${INCIDENTS} rows ${readFrom}`);
      expect(await objects()).toEqual(before);

      const tenth = await run(INCIDENTS - INCIDENTS / 10);
      expect(tenth.exitCode).toBe(1);
      expect(tenth.tile.guard!.verdicts[0]).toMatchObject({ rule: 'shrink' });
      expect(await objects()).toEqual(before);

      expect((await run(60)).exitCode).toBe(0);
      const overridden = await run(INCIDENTS, ['--allow-shrink']);
      expect(overridden.exitCode).toBe(0);
      expect(overridden.tile).toMatchObject({ rows: 0, guard: { tripped: true, overridden: true } });
    });
  }
});
