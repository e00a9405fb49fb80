import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import { CsvSink } from '../../../../src/sinks/csv/csv-sink.js';
import { OWNER_METADATA_KEY } from '../../../../src/sinks/stores/gcs/temp-objects.js';
import { describeWithFakeGcs } from '../../../support/fake-gcs-server.js';
import { DEAD_PID, tagOf } from '../../../support/temp-owners.js';
import { silentLogger as logger } from '../../../support/fake-sinks.js';
import { incidentsRun as context, twoColumns as columns, twoRows as rows } from '../../../support/two-row-fixture.js';

describeWithFakeGcs('the CSV sink on gs://', (gcs) => {
  const sinkFor = (path: string, options: { gzip?: boolean; manifest?: boolean } = {}) =>
    new CsvSink({
      config: { type: 'csv', gzip: options.gzip ?? false, manifest: options.manifest ?? false, path },
      directory: 'out',
      timezone: 'UTC',
      storageClient: gcs.storage,
    });

  it('publishes gzip bytes and a manifest whose sha256 and size match the object', async () => {
    const bucket = await gcs.newBucket();
    const writer = await sinkFor(`gs://${bucket}/exports/{name}/{date}.csv.gz`, { gzip: true, manifest: true }).open(context('run-gz'));
    expect(writer.target).toBe(`gs://${bucket}/exports/incidents/2026-07-01.csv.gz`);
    await writer.writeRows(rows);
    await writer.prepare();
    const result = await writer.publish();
    const [bytes] = await gcs.storage.bucket(bucket).file('exports/incidents/2026-07-01.csv.gz').download();
    expect(parse(gunzipSync(bytes).toString('utf8'))).toEqual([
      ['id', 'Title, "quoted"'],
      ['1', 'first'],
      ['2', 'zweite\nZeile'],
    ]);
    const [manifestBytes] = await gcs.storage.bucket(bucket).file('exports/incidents/2026-07-01.csv.gz.manifest.json').download();
    const manifest = JSON.parse(manifestBytes.toString('utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      file: '2026-07-01.csv.gz',
      job: 'incidents',
      runId: 'run-gz',
      rows: 2,
      bytes: bytes.length,
      gzip: true,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(result.details).toMatchObject({ sha256: manifest.sha256, bytes: bytes.length });
    // The published object's generation, as the service gave it (the trace's publish span names it).
    const [metadata] = await gcs.storage.bucket(bucket).file('exports/incidents/2026-07-01.csv.gz').getMetadata();
    expect(result.details?.generation).toBe(String(metadata.generation));
    const [files] = await gcs.storage.bucket(bucket).getFiles();
    expect(files.map((file) => file.name).sort()).toEqual(['exports/incidents/2026-07-01.csv.gz', 'exports/incidents/2026-07-01.csv.gz.manifest.json']);
  });

  it('leaves the target untouched and no temp object when a run fails after prepare', async () => {
    const bucket = await gcs.newBucket();
    await gcs.storage.bucket(bucket).file('a.csv').save('id\r\nprevious\r\n', { resumable: false });
    const writer = await sinkFor(`gs://${bucket}/a.csv`, { manifest: true }).open(context('run-failed'));
    await writer.writeRows(rows);
    await writer.prepare();
    expect((await gcs.storage.bucket(bucket).getFiles())[0]).toHaveLength(3); // target + temp object + temp manifest
    await writer.abort();
    const [files] = await gcs.storage.bucket(bucket).getFiles();
    expect(files.map((file) => file.name)).toEqual(['a.csv']);
    expect(String((await gcs.storage.bucket(bucket).file('a.csv').download())[0])).toBe('id\r\nprevious\r\n');
  });

  // An unknown bucket and a "directory" prefix at the target: test/sinks/files/object-targets.test.ts, for gs:// and s3:// alike.

  it('plans against the object: create when absent, unchanged after a run, the header diff when columns change (gzip too)', async () => {
    const bucket = await gcs.newBucket();
    const sink = sinkFor(`gs://${bucket}/plan/{name}.csv.gz`, { gzip: true });
    expect(await sink.plan(context('plan-1'))).toMatchObject({ sink: 'csv', target: `gs://${bucket}/plan/incidents.csv.gz`, action: 'create' });
    const writer = await sink.open(context('plan-2'));
    await writer.writeRows(rows);
    await writer.prepare();
    await writer.publish();
    expect(await sink.plan(context('plan-3'))).toMatchObject({ action: 'unchanged', details: [] });
    const renamed = { ...context('plan-4'), columns: [columns[0]!, { ...columns[1]!, header: 'Title' }] };
    expect(await sink.plan(renamed)).toMatchObject({ action: 'change', details: ['+ Title', '- Title, "quoted"'] });
  });

  it("sweeps a dead owner's temp object, keeps a live one's and an unknown host's younger than a day", async () => {
    const bucket = await gcs.newBucket();
    const b = gcs.storage.bucket(bucket);
    const deadTag = tagOf({ pid: DEAD_PID });
    const foreignTag = tagOf({ host: 'another-pod' });
    await b.file(`exports/.a.csv.tilehouse-dead+${deadTag}.tmp`).save('x', { resumable: false, metadata: { metadata: { [OWNER_METADATA_KEY]: deadTag } } });
    await b
      .file(`exports/.a.csv.tilehouse-foreign+${foreignTag}.tmp`)
      .save('x', { resumable: false, metadata: { metadata: { [OWNER_METADATA_KEY]: foreignTag } } });
    await b.file('exports/.not-ours.tmp').save('x', { resumable: false });
    const sink = sinkFor(`gs://${bucket}/exports/a.csv`);
    const live = await sink.open(context('live'));
    await live.writeRows(rows);
    await live.prepare();
    expect(await sink.sweep(logger)).toEqual([`gs://${bucket}/exports/.a.csv.tilehouse-dead+${deadTag}.tmp`]);
    const [files] = await b.getFiles();
    expect(files.map((file) => file.name).filter((name) => name.includes('tilehouse-live+'))).toHaveLength(1);
    expect(files.map((file) => file.name)).toContain(`exports/.a.csv.tilehouse-foreign+${foreignTag}.tmp`);
    expect(files.map((file) => file.name)).toContain('exports/.not-ours.tmp');
    await live.publish();
  });
});
