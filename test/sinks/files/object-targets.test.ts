// What a file sink refuses at an object store's target before any row, the same at gs:// and
// s3://: one code per failure whatever the store, the store as `targetKind`, and a message that
// names the job and the target with the format's word.
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { CsvSink } from '../../../src/sinks/csv/csv-sink.js';
import type { SinkRunContext } from '../../../src/sinks/sink.js';
import type { Column } from '../../../src/transform/column.js';
import { describeWithObjectStores } from '../../support/object-stores.js';

const columns: Column[] = [{ name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' }];
const logger = pino({ level: 'silent' });
const context = (runId: string): SinkRunContext => ({ jobName: 'incidents', tileId: 't', runId, startedAt: new Date('2026-07-01T06:00:00Z'), columns, logger });

async function failureOf(promise: Promise<unknown>): Promise<{ code?: string; targetKind?: string; format?: string; message: string }> {
  return promise.then(
    () => ({ message: 'resolved' }),
    (error: unknown) => error as { code: string; message: string },
  );
}

describeWithObjectStores('a CSV sink refusing an object target before any row', (store) => {
  const sinkFor = (target: string) =>
    new CsvSink({ config: { type: 'csv', gzip: false, manifest: false, path: target }, directory: 'out', timezone: 'UTC', ...store.sinkOptions() });

  it('an unknown bucket, in the access check and at open: bucket_not_found naming the job, the format and the target', async () => {
    const target = `${store.scheme}://no-such-bucket-tilehouse/a.csv`;
    const checked = await failureOf(sinkFor(target).checkAccess({ jobName: 'incidents', logger }));
    expect(checked).toMatchObject({ code: 'bucket_not_found', targetKind: store.kind, format: 'csv' });
    expect(checked.message).toMatch(
      new RegExp(`^job incidents: csv ${store.scheme}://no-such-bucket-tilehouse/: listing the bucket failed: bucket no-such-bucket-tilehouse does not exist`),
    );
    const opened = await failureOf(sinkFor(target).open(context('run-404')));
    expect(opened).toMatchObject({ code: 'bucket_not_found', targetKind: store.kind, format: 'csv' });
    expect(opened.message).toMatch(
      new RegExp(`^job incidents: csv ${target}: checking the bucket and the target failed: bucket no-such-bucket-tilehouse does not exist`),
    );
  });

  it('a target that is a "directory" prefix: target_is_directory at open; a sibling whose name merely starts with the target\'s is none', async () => {
    const bucket = await store.newBucket('dir');
    await store.put(bucket, 'exports/daily.csv/part-1.csv', 'x');
    const refused = await failureOf(sinkFor(`${store.scheme}://${bucket}/exports/daily.csv`).open(context('run-dir')));
    expect(refused).toMatchObject({ code: 'target_is_directory', targetKind: store.kind, format: 'csv' });
    expect(refused.message).toContain(`job incidents: csv ${store.scheme}://${bucket}/exports/daily.csv: `);
    // The legal answer: a sibling whose name only starts with the target's is no directory.
    await store.put(bucket, 'exports/daily.csv.bak', 'x');
    const writer = await sinkFor(`${store.scheme}://${bucket}/exports/daily.csv.b`).open(context('run-sibling'));
    await writer.abort();
  });
});
