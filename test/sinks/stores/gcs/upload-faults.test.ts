// Each test fails exactly one request of a gs:// run the way Cloud Storage documents it can fail
// (gcs-fault-proxy.ts, in front of gcs-precondition-proxy.ts, in front of fake-gcs-server: the
// precondition proxy because fake-gcs-server ignores ifGenerationMatch on rewrites, so a retried
// rewrite would never meet the 412 real Cloud Storage gives it). Each is either survived
// byte-exact (the object read back and parsed) or fails with the stated code and a message that
// claims only what was seen.
import { Writable } from 'node:stream';
import type { Storage } from '@google-cloud/storage';
import { parse } from 'csv-parse/sync';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CsvSink } from '../../../../src/sinks/csv/csv-sink.js';
import type { SinkResult, SinkRunContext } from '../../../../src/sinks/sink.js';
import { JOB_METADATA_KEY, RUN_ID_METADATA_KEY } from '../../../../src/sinks/stores/gcs/temp-objects.js';
import { CHUNK_GRANULE } from '../../../../src/sinks/stores/gcs/resumable-upload.js';
import type { Column, TypedRow } from '../../../../src/transform/column.js';
import { describeWithFakeGcs, fakeGcsClient, usePreconditionProxy } from '../../../support/fake-gcs-server.js';
import { startGcsFaultProxy, type FaultRule, type GcsFaultProxy } from '../../../support/gcs-fault-proxy.js';

const columns: Column[] = [
  { name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' },
  { name: 'title', header: 'Title, "quoted"', type: 'STRING', sourceDataType: 'text' },
];
// ~1.2 MB of CSV: five chunks of 256 KiB, so "the second chunk" is a chunk in the middle.
const ROWS: TypedRow[] = Array.from({ length: 20_000 }, (_, index) => [BigInt(index), `row ${index}, "quoted" and\nwrapped ${'x'.repeat(index % 50)}`]);
const EXPECTED = [['id', 'Title, "quoted"'], ...ROWS.map(([id, title]) => [String(id), String(title)])];
const PREVIOUS = 'id,Title\r\nprevious run\r\n';

interface Outcome {
  result?: SinkResult;
  error?: Error & { code?: string };
  /** Every log line the writer printed, as JSON. */
  lines: Array<{ level: number; msg: string; [key: string]: unknown }>;
}

describeWithFakeGcs('a gs:// upload and publish through a proxy that fails one request', (gcs) => {
  const through = usePreconditionProxy(gcs);
  let faults: GcsFaultProxy;
  let storage: Storage;

  beforeAll(async () => {
    faults = await startGcsFaultProxy(through.proxy.origin);
    storage = await fakeGcsClient(faults.origin);
  });
  afterAll(async () => {
    await faults?.close();
  });
  afterEach(() => {
    // Every rule a test arms must have fired: a fault that never happened proves nothing.
    const pending = faults.pending;
    faults.disarm();
    expect(pending, 'armed faults that never fired').toBe(0);
  });

  /** Arms `rule` `times` times in a row (each rule is one-shot). */
  function fail(rule: FaultRule, times = 1): void {
    for (let index = 0; index < times; index += 1) faults.fail(index === 0 ? rule : { ...rule, nth: 1 });
  }

  async function runWriter(
    bucket: string,
    options: {
      manifest?: boolean;
      chunkBytes?: number;
      maxAttempts?: number;
      runId?: string;
      signal?: AbortSignal;
      stopAfterPrepare?: AbortController;
      requestTimeoutMs?: number;
    } = {},
  ): Promise<Outcome> {
    const lines: Outcome['lines'] = [];
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(JSON.parse(chunk.toString('utf8')) as Outcome['lines'][number]);
          callback();
        },
      }),
    );
    const sink = new CsvSink({
      config: { type: 'csv', gzip: false, manifest: options.manifest ?? false, path: `gs://${bucket}/out/a.csv` },
      directory: 'out',
      timezone: 'UTC',
      storageClient: storage,
      gcsWrite: {
        limits: { maxAttempts: options.maxAttempts ?? 4, baseDelayMs: 5, maxDelayMs: 20 },
        requestTimeoutMs: options.requestTimeoutMs ?? 1_500,
        chunkBytes: options.chunkBytes ?? CHUNK_GRANULE,
      },
    });
    const context: SinkRunContext = {
      jobName: 'incidents',
      tileId: 't',
      runId: options.runId ?? 'run-faulty',
      startedAt: new Date('2026-07-01T06:00:00Z'),
      columns,
      logger,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.stopAfterPrepare ? { signal: options.stopAfterPrepare.signal } : {}),
    };
    const writer = await sink.open(context);
    try {
      for (let index = 0; index < ROWS.length; index += 1_000) await writer.writeRows(ROWS.slice(index, index + 1_000));
      await writer.prepare();
      options.stopAfterPrepare?.abort(new Error('SIGTERM'));
      return { result: await writer.publish(), lines };
    } catch (error) {
      await writer.abort();
      return { error: error as Outcome['error'], lines };
    }
  }

  async function bucketWithPrevious(): Promise<string> {
    const bucket = await gcs.newBucket('faults');
    await gcs.storage.bucket(bucket).file('out/a.csv').save(PREVIOUS, { resumable: false });
    return bucket;
  }

  async function objectsOf(bucket: string): Promise<string[]> {
    return (await gcs.storage.bucket(bucket).getFiles())[0].map((file) => file.name).sort();
  }

  async function expectPublishedWhole(bucket: string, outcome: Outcome): Promise<void> {
    expect(outcome.error, outcome.error?.message).toBeUndefined();
    const [bytes] = await gcs.storage.bucket(bucket).file('out/a.csv').download();
    expect(parse(bytes.toString('utf8'))).toEqual(EXPECTED);
    expect(outcome.result?.rows).toBe(ROWS.length);
    expect(await objectsOf(bucket)).toEqual(['out/a.csv']);
  }

  async function expectUntouched(bucket: string): Promise<void> {
    expect(String((await gcs.storage.bucket(bucket).file('out/a.csv').download())[0])).toBe(PREVIOUS);
  }

  describe('the upload survives', () => {
    it.each([
      ['session-start', { kind: 'status', status: 503 }],
      ['session-start', { kind: 'reset' }],
      ['chunk', { kind: 'status', status: 408 }],
      ['chunk', { kind: 'status', status: 429 }],
      ['chunk', { kind: 'status', status: 500 }],
      ['chunk', { kind: 'status', status: 503 }],
      ['chunk', { kind: 'reset' }],
      ['chunk', { kind: 'hang' }],
      ['chunk', { kind: 'lost-answer' }],
      ['finalize', { kind: 'status', status: 502 }],
      ['finalize', { kind: 'reset' }],
      ['finalize', { kind: 'lost-answer' }],
    ] as const)('a %s answered %j, byte-exact', async (on, fault) => {
      const bucket = await bucketWithPrevious();
      const before = faults.fired.length;
      fail({ on, fault, ...(on === 'chunk' ? { nth: 2 } : {}) });
      const outcome = await runWriter(bucket);
      expect(faults.fired.slice(before)).toEqual([`${on}:${fault.kind}`]);
      await expectPublishedWhole(bucket, outcome);
      expect(outcome.result?.details?.retries).toBeGreaterThanOrEqual(1);
      // Each retry is logged, naming the step and what failed, and nothing else is warned about.
      const warnings = outcome.lines.filter((line) => line.level >= 40);
      expect(warnings.length).toBeGreaterThanOrEqual(1);
      for (const warning of warnings) expect(warning.msg).toMatch(/^csv: Cloud Storage (starting|uploading a chunk|finishing the upload)/);
    });

    it('a chunk whose resend is preceded by a failed status query (503 on both)', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'chunk', fault: { kind: 'status', status: 503 }, nth: 3 });
      fail({ on: 'status-query', fault: { kind: 'status', status: 503 } });
      await expectPublishedWhole(bucket, await runWriter(bucket));
      expect(faults.fired.slice(-2)).toEqual(['chunk:status', 'status-query:status']);
    });

    it('legal: a chunk the service persisted only in part (308 with a shorter Range); the rest is sent from the kept chunk', async () => {
      const bucket = await bucketWithPrevious();
      const start = faults.seen.length;
      fail({ on: 'chunk', fault: { kind: 'partial-chunk', bytes: CHUNK_GRANULE }, nth: 2 });
      const outcome = await runWriter(bucket, { chunkBytes: 2 * CHUNK_GRANULE });
      await expectPublishedWhole(bucket, outcome);
      // No retry: a partial persist is progress, not a failure.
      expect(outcome.result?.details?.retries).toBeUndefined();
      const chunks = faults.seen.slice(start).filter((line) => line.startsWith('chunk ') || line.startsWith('finalize '));
      expect(chunks.length).toBeGreaterThanOrEqual(3);
    });

    it('legal: a 308 without Range on the first chunk (nothing persisted) resends from byte 0', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'chunk', fault: { kind: 'no-range-308' } });
      await expectPublishedWhole(bucket, await runWriter(bucket));
    });

    it('a session the service forgot (404) before anything was persisted is started again', async () => {
      const bucket = await bucketWithPrevious();
      const start = faults.seen.length;
      fail({ on: 'chunk', fault: { kind: 'status', status: 404 }, urlContains: 'upload_id=' });
      await expectPublishedWhole(bucket, await runWriter(bucket));
      expect(faults.seen.slice(start).filter((line) => line.startsWith('session-start ')).length).toBe(2);
    });
  });

  describe('the upload fails cleanly', () => {
    it('a session gone (410) after chunks were persisted: write_failed naming the object and why it cannot resume; target untouched, no temp object', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'chunk', fault: { kind: 'status', status: 410 }, nth: 3 });
      const outcome = await runWriter(bucket);
      expect(outcome.error?.code).toBe('write_failed');
      expect(outcome.error?.message).toMatch(
        new RegExp(
          `gs://${bucket}/out/\\.a\\.csv\\.tilehouse-run-faulty.* is gone \\(410\\) after ${2 * CHUNK_GRANULE} bytes were persisted; those bytes were streamed and cannot be produced again`,
        ),
      );
      expect(outcome.error?.message).not.toContain('upload_id=A');
      await expectUntouched(bucket);
      expect(await objectsOf(bucket)).toEqual(['out/a.csv']);
    });

    it('503 on every try of a chunk: write_failed after the attempts, target untouched', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'chunk', fault: { kind: 'status', status: 503 } }, 3);
      const outcome = await runWriter(bucket, { maxAttempts: 3 });
      expect(outcome.error?.code).toBe('write_failed');
      expect(outcome.error?.message).toContain('answered 503: Service Unavailable');
      await expectUntouched(bucket);
      expect(await objectsOf(bucket)).toEqual(['out/a.csv']);
    });
  });

  it("the run's stop aborts a chunk request that hangs at once, not after its timeout; target untouched", async () => {
    const bucket = await bucketWithPrevious();
    fail({ on: 'chunk', fault: { kind: 'hang' }, nth: 2 });
    const stop = new AbortController();
    const fired = faults.fired.length;
    let abortedAt = 0;
    const watcher = setInterval(() => {
      if (faults.fired.length > fired && abortedAt === 0) {
        abortedAt = Date.now();
        stop.abort(new Error('SIGTERM'));
      }
    }, 10);
    // A request timeout of ten minutes: a stop that waited for it would outlast the test's own timeout.
    const outcome = await runWriter(bucket, { signal: stop.signal, requestTimeoutMs: 600_000 });
    clearInterval(watcher);
    expect(abortedAt).toBeGreaterThan(0);
    expect(outcome.error?.message).toContain('SIGTERM');
    expect(outcome.lines.filter((line) => /retrying/.test(line.msg))).toEqual([]);
    await expectUntouched(bucket);
    expect(await objectsOf(bucket)).toEqual(['out/a.csv']);
  });

  describe('the publish', () => {
    it('a rewrite answered 503 before it was performed is retried and published', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'rewrite', fault: { kind: 'status', status: 503 } });
      await expectPublishedWhole(bucket, await runWriter(bucket));
    });

    it.each([
      ['its answer lost (connection reset after it was performed)', { kind: 'lost-answer' }],
      ['a 503 after it was performed', { kind: 'answer-instead', status: 503 }],
      ['a 412 although it was performed (what the retry of a lost answer meets)', { kind: 'answer-instead', status: 412 }],
    ] as const)('a rewrite with %s: published, and every line says so', async (_title, fault) => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'rewrite', fault });
      const outcome = await runWriter(bucket);
      await expectPublishedWhole(bucket, outcome);
      const [metadata] = await gcs.storage.bucket(bucket).file('out/a.csv').getMetadata();
      expect(metadata.metadata?.[RUN_ID_METADATA_KEY]).toBe('run-faulty');
      const text = outcome.lines.map((line) => line.msg).join('\n');
      expect(text).not.toMatch(/published nothing|untouched|changed while|conflict/i);
      // At most one line says a try failed and is retried; the last says what the target was found to hold.
      const warnings = outcome.lines.filter((line) => line.level >= 40).map((line) => line.msg);
      expect(warnings.at(-1)).toMatch(/the target holds this run's object.*: published$/);
      expect(warnings.slice(0, -1)).toEqual(
        fault.kind === 'answer-instead' && fault.status === 412
          ? []
          : ['csv: Cloud Storage rewriting the temp object onto the target failed transiently; retrying'],
      );
    });

    it("a publish started runs to its outcome after the run's stop: a lost rewrite answer is still judged by reading the target", async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'rewrite', fault: { kind: 'lost-answer' } });
      const outcome = await runWriter(bucket, { stopAfterPrepare: new AbortController() });
      await expectPublishedWhole(bucket, outcome);
      expect(outcome.lines.filter((line) => line.level >= 40).at(-1)?.msg).toMatch(/the target holds this run's object.*: published$/);
    });

    it('the temp manifest rewrite with its answer lost: manifest published, its sha256 in the result', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'rewrite', fault: { kind: 'lost-answer' }, urlContains: 'manifest.json' });
      const outcome = await runWriter(bucket, { manifest: true });
      expect(outcome.error).toBeUndefined();
      expect(outcome.result?.details?.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(outcome.result?.details?.manifestPublished).toBeUndefined();
      expect(await objectsOf(bucket)).toEqual(['out/a.csv', 'out/a.csv.manifest.json']);
    });

    it('503 on every rewrite: write_failed saying the target was read and still holds its generation', async () => {
      const bucket = await bucketWithPrevious();
      const [{ generation }] = await gcs.storage.bucket(bucket).file('out/a.csv').getMetadata();
      fail({ on: 'rewrite', fault: { kind: 'status', status: 503 } }, 3);
      const outcome = await runWriter(bucket, { maxAttempts: 3 });
      expect(outcome.error?.code).toBe('write_failed');
      expect(outcome.error?.message).toContain(
        `the target was read afterwards and still holds generation ${generation}, as before the run: this run published nothing`,
      );
      await expectUntouched(bucket);
      expect(await objectsOf(bucket)).toEqual(['out/a.csv']);
    });

    it('503 on every rewrite and the target unreadable afterwards: the message claims nothing about what was published', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'rewrite', fault: { kind: 'status', status: 503 } });
      // The metadata read before the second try (which ends that try), and the one after the last: both fail.
      // (The first read of the target is the open's, through the client: it is let through.)
      fail({ on: 'metadata', fault: { kind: 'status', status: 503 }, urlContains: '/o/out%2Fa.csv', nth: 2 });
      fail({ on: 'metadata', fault: { kind: 'status', status: 503 }, urlContains: '/o/out%2Fa.csv' });
      const outcome = await runWriter(bucket, { maxAttempts: 2 });
      // Its own code, and marked so that neither a stop's summary nor a partial publish's says the previous run is still there.
      expect(outcome.error?.code).toBe('publish_outcome_unknown');
      expect(outcome.error).toMatchObject({ publishOutcomeUnknown: true });
      expect(outcome.error?.message).toContain("whether the target now holds this run's object is unknown");
      expect(outcome.error?.message).not.toMatch(/published nothing|untouched/);
    });

    it('a real conflict (412, another run replaced the target): target_changed names it after reading it', async () => {
      const bucket = await bucketWithPrevious();
      // The other run writes between this run's open and its publish: a precondition held by the proxy.
      fail({ on: 'rewrite', fault: { kind: 'status', status: 412 } });
      await gcs.storage
        .bucket(bucket)
        .file('out/a.csv')
        .save('id\r\nother\r\n', { resumable: false, metadata: { metadata: { [RUN_ID_METADATA_KEY]: 'run-other', [JOB_METADATA_KEY]: 'incidents' } } });
      const outcome = await runWriter(bucket);
      expect(outcome.error?.code).toBe('target_changed');
      expect(outcome.error?.message).toMatch(
        /written by run run-other of job incidents.*it was read after the refused rewrite: nothing was overwritten and this run published nothing/,
      );
      expect(String((await gcs.storage.bucket(bucket).file('out/a.csv').download())[0])).toBe('id\r\nother\r\n');
    });

    it('the temp delete failing on every try does not fail the published run; it is logged for the sweep', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'delete', fault: { kind: 'status', status: 503 } }, 3);
      const outcome = await runWriter(bucket);
      expect(outcome.error).toBeUndefined();
      expect(parse((await gcs.storage.bucket(bucket).file('out/a.csv').download())[0].toString('utf8'))).toEqual(EXPECTED);
      expect(outcome.lines.filter((line) => line.level >= 40).at(-1)?.msg).toBe(
        'csv: could not delete a temp object; a later sweep or the bucket lifecycle rule removes it',
      );
      expect((await objectsOf(bucket)).filter((name) => name.includes('.tilehouse-run-faulty'))).toHaveLength(1);
    });

    it('a temp delete answered 503 once is retried: no temp object left', async () => {
      const bucket = await bucketWithPrevious();
      fail({ on: 'delete', fault: { kind: 'status', status: 503 } });
      await expectPublishedWhole(bucket, await runWriter(bucket));
    });
  });
});
