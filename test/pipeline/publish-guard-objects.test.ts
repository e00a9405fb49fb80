import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithObjectStores } from '../support/object-stores.js';
import { detailQueryAbove } from '../support/queries.js';

// The publish guard of object targets, gs:// (fake-gcs-server) and s3:// (moto), the same test
// against each: what an object holds is read from its manifest object, else from the object
// itself (CSV records, gunzipped; Parquet's footer by ranged reads); a refusal leaves every object
// byte-identical and no temp object (or, on S3, multipart upload: store.objects lists them) behind.
const INCIDENTS = 200;

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });

const CASES = [
  { name: 'csv', key: 't/incidents.csv', sink: {}, readFrom: '(the CSV file counted)' },
  { name: 'csv_gz_manifest', key: 't/incidents.csv.gz', sink: { gzip: true, manifest: true }, readFrom: '(its manifest)' },
  { name: 'csv_gz', key: 't/incidents.csv.gz', sink: { gzip: true }, readFrom: '(the CSV file counted)' },
  { name: 'parquet', key: 't/incidents.parquet', sink: {}, readFrom: '(the Parquet file counted)' },
];

describeWithObjectStores('the publish guard of objects', (store) => {
  for (const { name, key, sink, readFrom } of CASES) {
    it(`${name}: refuses no rows and a tenth, every object byte-identical and nothing left behind; --allow-shrink publishes; a modest shrink passes`, async () => {
      const bucket = await store.newBucket(`guard-${name.replaceAll('_', '-')}`);
      const dir = path.join(fixture.root, `${store.kind}-${name}`);
      const workspace = await writeWorkspace(dir, fixture.sandbox, [], { itemsPerPage: 50 });
      await store.configure(workspace.configFile);
      const type = name.startsWith('parquet') ? 'parquet' : 'csv';
      const run = async (above: number, flags: string[] = []) => {
        await writeFile(
          path.join(workspace.jobsDir, 'incidents.yaml'),
          stringify({
            name: 'incidents',
            tile: SANDBOX_TILE,
            query: detailQueryAbove(above),
            sinks: [{ type, path: `${store.scheme}://${bucket}/${key}`, ...sink }],
          }),
        );
        const summaryFile = path.join(dir, 'summary.json');
        const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile, ...flags], {
          env: sandboxEnv(fixture.sandbox),
          seams: store.seams(),
        });
        const tile = (
          JSON.parse(await readFile(summaryFile, 'utf8')) as {
            tiles: Array<Record<string, unknown> & { guard?: { verdicts: Array<{ rule?: string; reason: string }> } }>;
          }
        ).tiles[0]!;
        return { ...result, tile };
      };

      const first = await run(0);
      expect(first.exitCode, first.stderr).toBe(0);
      const before = await store.objects(bucket);
      expect(before.map(([stored]) => stored)).toContain(key);
      const empty = await run(INCIDENTS);
      expect(empty.exitCode).toBe(1);
      expect(empty.tile).toMatchObject({ status: 'failed', error: { code: 'publish_guard_tripped' } });
      expect(empty.tile.guard!.verdicts[0]).toMatchObject({ rule: 'empty' });
      expect(empty.tile.guard!.verdicts[0]!.reason).toContain(`holds ${INCIDENTS} rows ${readFrom}`);
      expect(await store.objects(bucket)).toEqual(before);

      const tenth = await run(INCIDENTS - INCIDENTS / 10);
      expect(tenth.exitCode).toBe(1);
      expect(tenth.tile.guard!.verdicts[0]).toMatchObject({ rule: 'shrink' });
      expect(await store.objects(bucket)).toEqual(before);

      expect((await run(60)).exitCode).toBe(0);
      const overridden = await run(INCIDENTS, ['--allow-shrink']);
      expect(overridden.exitCode).toBe(0);
      expect(overridden.tile).toMatchObject({ rows: 0, guard: { tripped: true, overridden: true } });
    });
  }
});
