// Which run wrote a file target (`tilehouse status`), as each store records it: the manifest
// beside it when it describes the file, else an object's run-id metadata, else (a local file)
// nothing but its last change. A count is never taken from a manifest beside another file.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { CsvSink } from '../../../src/sinks/csv/csv-sink.js';
import type { SinkRunContext } from '../../../src/sinks/sink.js';
import type { Column } from '../../../src/transform/column.js';
import { jobDefinitionOf } from '../../../src/value-types/job-definition.js';
import { describeWithObjectStores } from '../../support/object-stores.js';
import { tempDirForAll } from '../../support/temp-dir-hooks.js';

const columns: Column[] = [{ name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' }];
const logger = pino({ level: 'silent' });
const definition = jobDefinitionOf({ query: { items: [{ header: 'id', filters: [] }] }, sinks: [] });
const context = (runId: string, startedAt = '2026-11-27T02:00:00Z'): SinkRunContext => ({
  jobName: 'incidents',
  tileId: 't',
  runId,
  startedAt: new Date(startedAt),
  columns,
  logger,
  definition,
});

async function publish(sink: CsvSink, runId: string, rows: number): Promise<void> {
  const writer = await sink.open(context(runId));
  await writer.writeRows(Array.from({ length: rows }, (_, index) => [BigInt(index)]));
  await writer.prepare();
  await writer.publish();
}

describe('a local CSV target: which run wrote it', () => {
  const root = tempDirForAll();
  const sinkAt = (file: string, manifest: boolean) =>
    new CsvSink({ config: { type: 'csv', gzip: false, manifest, path: path.join(root.path, file) }, directory: root.path, timezone: 'UTC' });

  it('none before any run; with a manifest, its run, the run start, rows and definition', async () => {
    const sink = sinkAt('with-manifest.csv', true);
    expect(await sink.publication(context('later'))).toMatchObject({ state: 'none' });
    await publish(sink, '20261127T020000Z-aaaaaa', 3);
    expect(await sink.publication(context('later'))).toEqual({
      sink: 'csv',
      target: path.join(root.path, 'with-manifest.csv'),
      state: 'written',
      runId: '20261127T020000Z-aaaaaa',
      at: '2026-11-27T02:00:00.000Z',
      rows: 3,
      definition,
      readFrom: 'its manifest',
    });
  });

  it('without a manifest: no run named, its last change and its rows counted', async () => {
    const sink = sinkAt('bare.csv', false);
    await publish(sink, 'run-bare', 2);
    const publication = await sink.publication(context('later'));
    expect(publication).toMatchObject({ state: 'unrecorded', rows: 2, readFrom: 'file modified; rows counted' });
    expect(publication.runId).toBeUndefined();
    expect(Date.parse(publication.at!)).not.toBeNaN();
  });

  it('a manifest beside another file (a newer one of other size) is not taken for its run', async () => {
    const sink = sinkAt('replaced.csv', true);
    await publish(sink, 'run-with-manifest', 3);
    await mkdir(root.path, { recursive: true });
    await writeFile(path.join(root.path, 'replaced.csv'), 'id\r\n1\r\n2\r\n3\r\n4\r\n5\r\n');
    expect(await sink.publication(context('later'))).toMatchObject({ state: 'unrecorded', rows: 5 });
  });
});

describeWithObjectStores('an object CSV target without a manifest: which run wrote it', (store) => {
  it('names the run its metadata carries, with the rows counted', async () => {
    const bucket = await store.newBucket('who');
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, manifest: false, path: `${store.scheme}://${bucket}/incidents.csv` },
      directory: 'out',
      timezone: 'UTC',
      ...store.sinkOptions(),
    });
    await publish(sink, 'run-object-1', 4);
    expect(await sink.publication(context('later'))).toMatchObject({
      state: 'written',
      runId: 'run-object-1',
      rows: 4,
      readFrom: 'object metadata; rows counted',
    });
  });
});
