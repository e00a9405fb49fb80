// fake-gcs-server v1.56.1 ignores ifGenerationMatch on rewriteTo/copyTo/DELETE (it enforces it on
// uploads only; see docs/emulators.md, "What fake-gcs-server could not show"), and it has no IAM. A test
// of "a concurrent writer is detected" against it alone would pass whether or not the code is
// right. So these tests put a small proxy in front of it that answers exactly one request the way
// Cloud Storage does (412 conditionNotMet, 403 with its message) and record the exact request the
// client sent, and assert on both.
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { CsvSink } from '../../../../src/sinks/csv/csv-sink.js';
import type { SinkRunContext } from '../../../../src/sinks/sink.js';
import { JOB_METADATA_KEY, RUN_ID_METADATA_KEY } from '../../../../src/sinks/stores/gcs/temp-objects.js';
import type { Column } from '../../../../src/transform/column.js';
import { describeWithFakeGcs, fakeGcsClient } from '../../../support/fake-gcs-server.js';
import { answerJson, startGcsProxy as startProxy } from '../../../support/gcs-proxy.js';

const columns: Column[] = [{ name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' }];
const logger = pino({ level: 'silent' });
const context = (runId: string): SinkRunContext => ({ jobName: 'incidents', tileId: 't', runId, startedAt: new Date('2026-07-01T06:00:00Z'), columns, logger });

describeWithFakeGcs('the CSV sink on gs:// against answers only real Cloud Storage gives', (gcs) => {
  let proxy: Awaited<ReturnType<typeof startProxy>> | undefined;
  afterEach(async () => {
    await proxy?.close();
  });

  it('publishes with ifGenerationMatch = the generation seen at open, and names the other writer on 412 (target_changed)', async () => {
    const bucketName = await gcs.newBucket();
    const bucket = gcs.storage.bucket(bucketName);
    await bucket.file('a.csv').save('id\r\n0\r\n', { resumable: false });
    const [{ generation: seenAtOpen }] = await bucket.file('a.csv').getMetadata();
    proxy = await startProxy(gcs.origin, (incoming, response) =>
      incoming.url!.includes('/rewriteTo/')
        ? answerJson(response, 412, 'conditionNotMet', 'At least one of the pre-conditions you specified did not hold.')
        : false,
    );
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, path: `gs://${bucketName}/a.csv` },
      directory: 'out',
      timezone: 'UTC',
      storageClient: await fakeGcsClient(proxy.origin),
    });
    const writer = await sink.open(context('run-late'));
    await writer.writeRows([[1n]]);
    await writer.prepare();
    // Another run replaces the target meanwhile (what real Cloud Storage's 412 reports).
    await bucket
      .file('a.csv')
      .save('id\r\n9\r\n', { resumable: false, metadata: { metadata: { [RUN_ID_METADATA_KEY]: 'run-early', [JOB_METADATA_KEY]: 'incidents' } } });
    const failure = await writer.publish().then(
      () => undefined,
      (error: unknown) => error as Error & { code: string },
    );
    expect(failure?.code).toBe('target_changed');
    expect(failure?.message).toMatch(/run run-early of job incidents/);
    expect(failure?.message).toMatch(new RegExp(`generation ${seenAtOpen}`));
    const rewrite = proxy.seen.find((line) => line.includes('/rewriteTo/'))!;
    expect(new URL(rewrite.split(' ')[1]!, proxy.origin).searchParams.get('ifGenerationMatch')).toBe(String(seenAtOpen));
    await writer.abort();
    expect(String((await bucket.file('a.csv').download())[0])).toBe('id\r\n9\r\n');
    expect((await bucket.getFiles())[0].map((file) => file.name)).toEqual(['a.csv']);
  });

  it('asks for ifGenerationMatch=0 when the target did not exist at open', async () => {
    const bucketName = await gcs.newBucket();
    proxy = await startProxy(gcs.origin, () => false);
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, path: `gs://${bucketName}/new.csv` },
      directory: 'out',
      timezone: 'UTC',
      storageClient: await fakeGcsClient(proxy.origin),
    });
    const writer = await sink.open(context('run-new'));
    await writer.prepare();
    await writer.publish();
    const rewrite = proxy.seen.find((line) => line.includes('/rewriteTo/'))!;
    expect(new URL(rewrite.split(' ')[1]!, proxy.origin).searchParams.get('ifGenerationMatch')).toBe('0');
  });

  it('fails with permission_denied naming storage.objects.create when the upload session is refused, target untouched', async () => {
    const bucketName = await gcs.newBucket();
    await gcs.storage.bucket(bucketName).file('a.csv').save('id\r\n0\r\n', { resumable: false });
    proxy = await startProxy(gcs.origin, (incoming, response) =>
      incoming.method === 'POST' && incoming.url!.startsWith('/upload/')
        ? answerJson(
            response,
            403,
            'forbidden',
            'tilehouse@p.iam.gserviceaccount.com does not have storage.objects.create access to the Google Cloud Storage object.',
          )
        : false,
    );
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, path: `gs://${bucketName}/a.csv` },
      directory: 'out',
      timezone: 'UTC',
      storageClient: await fakeGcsClient(proxy.origin),
    });
    const failure = await (async () => {
      const writer = await sink.open(context('run-no-create'));
      try {
        await writer.writeRows([[1n]]);
        await writer.prepare();
      } catch (error) {
        await writer.abort();
        return error as Error & { code: string };
      }
      return undefined;
    })();
    expect(failure?.code).toBe('permission_denied');
    expect(failure?.message).toContain(`permission storage.objects.create is missing on bucket ${bucketName}`);
    expect(String((await gcs.storage.bucket(bucketName).file('a.csv').download())[0])).toBe('id\r\n0\r\n');
    expect((await gcs.storage.bucket(bucketName).getFiles())[0].map((file) => file.name)).toEqual(['a.csv']);
  });

  it('names the bucket and the missing permission on 403, at open (permission_denied)', async () => {
    const bucketName = await gcs.newBucket();
    proxy = await startProxy(gcs.origin, (incoming, response) =>
      incoming.method === 'GET' && incoming.url!.startsWith(`/storage/v1/b/${bucketName}/o?`)
        ? answerJson(
            response,
            403,
            'forbidden',
            `tilehouse@p.iam.gserviceaccount.com does not have storage.objects.list access to the Google Cloud Storage bucket.`,
          )
        : false,
    );
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, path: `gs://${bucketName}/a.csv` },
      directory: 'out',
      timezone: 'UTC',
      storageClient: await fakeGcsClient(proxy.origin),
    });
    const failure = await sink.open(context('run-403')).then(
      () => undefined,
      (error: unknown) => error as Error & { code: string },
    );
    expect(failure?.code).toBe('permission_denied');
    expect(failure?.message).toContain(`permission storage.objects.list is missing on bucket ${bucketName}`);
  });
});
