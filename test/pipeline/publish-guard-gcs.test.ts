import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { describeWithFakeGcs, fakeGcsClient } from '../support/fake-gcs-server.js';
import { detailQueryAbove } from '../support/queries.js';

// The publish guard of gs:// file targets on fake-gcs-server: what an object holds is read from
// its manifest object, else from the object itself (CSV records, gunzipped; Parquet's footer by
// two ranged reads); a refusal leaves the object byte-identical and no temp object behind.
const INCIDENTS = 200;

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS });

describeWithFakeGcs('the publish guard of gs:// objects', (gcs) => {
  const CASES = [
    { name: 'csv', sink: (bucket: string) => ({ type: 'csv', path: `gs://${bucket}/t/incidents.csv` }), readFrom: '(the CSV file counted)' },
    {
      name: 'csv_gz_manifest',
      sink: (bucket: string) => ({ type: 'csv', path: `gs://${bucket}/t/incidents.csv.gz`, gzip: true, manifest: true }),
      readFrom: '(its manifest)',
    },
    { name: 'csv_gz', sink: (bucket: string) => ({ type: 'csv', path: `gs://${bucket}/t/incidents.csv.gz`, gzip: true }), readFrom: '(the CSV file counted)' },
    { name: 'parquet', sink: (bucket: string) => ({ type: 'parquet', path: `gs://${bucket}/t/incidents.parquet` }), readFrom: '(the Parquet file counted)' },
  ];

  for (const { name, sink, readFrom } of CASES) {
    it(`${name}: refuses no rows and a tenth, the object byte-identical and no temp object left; --allow-shrink publishes; a modest shrink passes`, async () => {
      const bucket = await gcs.newBucket(`guard-${name.replaceAll('_', '-')}`);
      const dir = path.join(fixture.root, name);
      const workspace = await writeWorkspace(dir, fixture.sandbox, [], { itemsPerPage: 50 });
      const storageClient = await fakeGcsClient(gcs.origin);
      const run = async (above: number, flags: string[] = []) => {
        await writeFile(
          path.join(workspace.jobsDir, 'incidents.yaml'),
          stringify({ name: 'incidents', tile: SANDBOX_TILE, query: detailQueryAbove(above), sinks: [sink(bucket)] }),
        );
        const summaryFile = path.join(dir, 'summary.json');
        const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--summary-json', summaryFile, ...flags], {
          env: sandboxEnv(fixture.sandbox),
          seams: { sinkOptions: { storageClient } },
        });
        const tile = (
          JSON.parse(await readFile(summaryFile, 'utf8')) as {
            tiles: Array<Record<string, unknown> & { guard?: { verdicts: Array<{ rule?: string; reason: string }> } }>;
          }
        ).tiles[0]!;
        return { ...result, tile };
      };
      const objects = async () => {
        const [files] = await gcs.storage.bucket(bucket).getFiles();
        return Promise.all(files.map(async (file) => [file.name, (await file.download())[0].toString('base64')] as const)).then((entries) => entries.sort());
      };

      expect((await run(0)).exitCode).toBe(0);
      const before = await objects();
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
