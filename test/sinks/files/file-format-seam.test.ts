// The FileFormat seam, specified by a second format that exists only here: a length-prefixed binary
// format whose column names sit in a footer at the file's tail (as Parquet's do), whose encoder
// returns Uint8Array chunks and keeps state across a run, and which has no wrapper stream. It goes
// through the generic local and gs:// writers, with publish, abort, sweep, manifest and window
// state, importing nothing but src/sinks/files/: a second format needs no change there.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../../src/config/environment-schema.js';
import type { SinkConfig } from '../../../src/config/job-schema.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { fileSinkKind } from '../../../src/sinks/files/descriptor.js';
import type { FileChunk, FileFormat, FileSinkConfig, StoredFile } from '../../../src/sinks/files/file-format.js';
import { FileSink } from '../../../src/sinks/files/file-sink.js';
import { OWNER_METADATA_KEY } from '../../../src/sinks/stores/gcs/temp-objects.js';
import type { SinkRunContext } from '../../../src/sinks/sink.js';
import type { Column, TypedRow } from '../../../src/transform/column.js';
import { describeWithFakeGcs } from '../../support/fake-gcs-server.js';
import { makeTempDir } from '../../support/temp-dir.js';
import { DEAD_PID, tagOf } from '../../support/temp-owners.js';

// ---- the second format: "LPB" -------------------------------------------------------------------
// MAGIC, then per row a u32 big-endian length and the row as JSON (bigints as text), then the
// footer: the column names (not the headers) as JSON, its u32 length, MAGIC.
const MAGIC = Buffer.from('LPB1');
const TYPE = 'lpb' as SinkConfig['type']; // a format registered nowhere: the seam needs no registry entry
type LpbConfig = FileSinkConfig & { compressed?: never };

interface Trace {
  encoders: number;
  /** Every range readColumns asked of a stored file. */
  ranges: Array<{ start: number; end?: number } | undefined>;
}
const trace: Trace = { encoders: 0, ranges: [] };
/** When set, the next encoder's `end` throws this (a footer that cannot be encoded). */
let failFooter: Error | undefined;

function lengthPrefixed(payload: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(payload.length);
  return Buffer.concat([length, payload]);
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.from(part as Uint8Array));
  return Buffer.concat(parts);
}

const lpbFormat: FileFormat<LpbConfig> = {
  name: TYPE,
  label: 'LPB',
  contentType: () => 'application/x-lpb',
  defaultPathTemplate: (_config, windowed) => (windowed ? '{name}/{date}.lpb' : '{name}.lpb'),
  wrapper: () => undefined,
  gzipped: () => false,
  storedType: (column) => column.type,
  createEncoder(columns) {
    trace.encoders += 1;
    const failure = failFooter;
    failFooter = undefined;
    let rows = 0; // state across a run's pages, as a row group's would be
    return {
      start: () => [new Uint8Array(MAGIC)],
      *encode(batch): Generator<FileChunk> {
        rows += batch.length;
        yield new Uint8Array(
          Buffer.concat(
            batch.map((row) =>
              lengthPrefixed(Buffer.from(JSON.stringify(row, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)))),
            ),
          ),
        );
      },
      end() {
        if (failure !== undefined) throw failure;
        const footer = Buffer.from(JSON.stringify({ headers: columns.map((column) => column.name), rows }));
        const length = Buffer.alloc(4);
        length.writeUInt32BE(footer.length);
        return [new Uint8Array(Buffer.concat([footer, length, MAGIC]))];
      },
    };
  },
  // Names, not headers (as warehouse-safe names would be): plan must compare what the format declares.
  columnNames: (columns) => columns.map((column) => column.name),
  // From the tail only, as a Parquet footer is read.
  async readColumns(file: StoredFile) {
    const size = await file.size();
    const tailRange = { start: size - 8, end: size - 1 };
    trace.ranges.push(tailRange);
    const tail = await readAll(file.read(tailRange));
    if (!tail.subarray(4).equals(MAGIC)) throw new Error('not an LPB file');
    const length = tail.readUInt32BE(0);
    const footerRange = { start: size - 8 - length, end: size - 9 };
    trace.ranges.push(footerRange);
    return (JSON.parse((await readAll(file.read(footerRange))).toString('utf8')) as { headers: string[] }).headers;
  },
  // The publish guard's count of a file without a manifest: the footer's, as Parquet's num_rows.
  async countRows(file: StoredFile) {
    const bytes = await readAll(file.read());
    return decode(bytes).footer.rows;
  },
};

/** An LPB file's rows (as JSON values) and footer, checked independently of the encoder. */
function decode(bytes: Buffer): { rows: unknown[]; footer: { headers: string[]; rows: number } } {
  expect(bytes.subarray(0, 4).equals(MAGIC)).toBe(true);
  expect(bytes.subarray(-4).equals(MAGIC)).toBe(true);
  const footerLength = bytes.readUInt32BE(bytes.length - 8);
  const footerStart = bytes.length - 8 - footerLength;
  const rows: unknown[] = [];
  for (let offset = 4; offset < footerStart; ) {
    const length = bytes.readUInt32BE(offset);
    rows.push(JSON.parse(bytes.subarray(offset + 4, offset + 4 + length).toString('utf8')));
    offset += 4 + length;
  }
  return { rows, footer: JSON.parse(bytes.subarray(footerStart, bytes.length - 8).toString('utf8')) as { headers: string[]; rows: number } };
}

// ---- fixtures ------------------------------------------------------------------------------------
const columns: Column[] = [
  { name: 'id', header: 'id', type: 'INT64', sourceDataType: 'number' },
  { name: 'title', header: 'Title', type: 'STRING', sourceDataType: 'text' },
];
const PAGE_1: TypedRow[] = [
  [1n, 'first'],
  [2n, ''],
];
const PAGE_2: TypedRow[] = [
  [3n, null],
  [9_007_199_254_740_993n, 'zweite\nZeile ✓'],
];
const EXPECTED = [
  ['1', 'first'],
  ['2', ''],
  ['3', null],
  ['9007199254740993', 'zweite\nZeile ✓'],
];
const logger = pino({ level: 'silent' });
const context = (runId: string, extra: Partial<SinkRunContext> = {}): SinkRunContext => ({
  jobName: 'seam',
  tileId: 't',
  runId,
  startedAt: new Date('2026-07-01T06:00:00Z'),
  columns,
  logger,
  ...extra,
});

const kind = (directory: string, storage?: FileSinkOptionsStorage) =>
  fileSinkKind<LpbConfig>({
    format: lpbFormat,
    configSchema: undefined as never,
    definitionSettings: { decides: ['type', 'path'], decidesNot: [] },
    directory: () => directory,
    guardDefaults: () => undefined,
    createSink: (options) => new FileSink(lpbFormat, { ...options, ...(storage ? { storageClient: storage } : {}) }),
  });
type FileSinkOptionsStorage = NonNullable<ConstructorParameters<typeof FileSink>[1]['storageClient']>;
const environment = { stopDeadlineMs: 5_000, sinks: {} } as unknown as EnvironmentConfig;
const jobWith = (config: LpbConfig): LoadedJob =>
  ({ name: 'seam', tile: 't', file: 'jobs/seam.yaml', timezone: 'UTC', sinks: [config] }) as unknown as LoadedJob;

async function runOnce(sink: FileSink, runId: string, extra: Partial<SinkRunContext> = {}) {
  const writer = await sink.open(context(runId, extra));
  await writer.writeRows(PAGE_1);
  await writer.writeRows(PAGE_2);
  await writer.prepare();
  return { writer, result: await writer.publish() };
}

describe('the FileFormat seam, local files (a length-prefixed binary format)', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await makeTempDir('tilehouse-seam-');
    trace.encoders = 0;
    trace.ranges = [];
  });
  afterEach(() => rm(directory, { recursive: true, force: true }));

  const sinkFor = (config: Partial<LpbConfig> = {}) =>
    new FileSink(lpbFormat, { config: { type: TYPE, manifest: true, ...config }, directory, timezone: 'UTC' });

  it('publishes the binary bytes in two phases with a manifest, one fresh encoder per run, and plans from the footer', async () => {
    const sink = sinkFor();
    const writer = await sink.open(context('run-1'));
    await writer.writeRows(PAGE_1);
    await writer.writeRows(PAGE_2);
    await writer.prepare();
    // Prepared: only our two temp files (data, manifest); no target for readers yet.
    const before = await readdir(directory);
    expect(before).toHaveLength(2);
    expect(before.every((name) => /^\.seam\.lpb(\.manifest\.json)?\.tilehouse-run-1\+.+\.tmp$/.test(name))).toBe(true);
    const result = await writer.publish();
    expect((await readdir(directory)).sort()).toEqual(['seam.lpb', 'seam.lpb.manifest.json']);

    const bytes = await readFile(path.join(directory, 'seam.lpb'));
    expect(decode(bytes)).toEqual({ rows: EXPECTED, footer: { headers: ['id', 'title'], rows: 4 } });
    const manifest = JSON.parse(await readFile(path.join(directory, 'seam.lpb.manifest.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      file: 'seam.lpb',
      job: 'seam',
      runId: 'run-1',
      rows: 4,
      bytes: bytes.length,
      gzip: false,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(result).toMatchObject({
      sink: TYPE,
      target: path.join(directory, 'seam.lpb'),
      rows: 4,
      details: { bytes: bytes.length, gzip: false, sha256: manifest.sha256 },
    });

    await runOnce(sink, 'run-2');
    expect(trace.encoders).toBe(2);
    expect(decode(await readFile(path.join(directory, 'seam.lpb'))).rows).toEqual(EXPECTED); // not doubled by a reused encoder

    expect(await sink.plan(context('plan'))).toMatchObject({ sink: TYPE, action: 'unchanged', details: [] });
    // A header renamed, the name kept: the file would declare the same names.
    expect(await sink.plan(context('plan', { columns: [columns[0]!, { ...columns[1]!, header: 'Name' }] }))).toMatchObject({ action: 'unchanged' });
    expect(await sink.plan(context('plan', { columns: [columns[0]!, { ...columns[1]!, name: 'label' }] }))).toMatchObject({
      action: 'change',
      details: ['+ label', '- title'],
    });
    // The footer was read from the tail: no range started at the file's first byte.
    expect(trace.ranges.length).toBeGreaterThan(0);
    expect(trace.ranges.every((range) => range !== undefined && range.start > 0)).toBe(true);
  });

  it('plans "create" when there is no file, and names the file in its own words when the tail is not its format', async () => {
    const sink = sinkFor({ manifest: false });
    expect(await sink.plan(context('plan'))).toMatchObject({ action: 'create', target: path.join(directory, 'seam.lpb') });
    await writeFile(path.join(directory, 'seam.lpb'), 'id,title\r\n1,a\r\n');
    await expect(sink.plan(context('plan'))).rejects.toThrow('not an LPB file');
  });

  it('keeps the previous file and leaves nothing behind on abort after prepare', async () => {
    await writeFile(path.join(directory, 'seam.lpb'), 'previous');
    const writer = await sinkFor().open(context('run-aborted'));
    await writer.writeRows(PAGE_1);
    await writer.prepare();
    expect(await readdir(directory)).toHaveLength(3);
    await writer.abort();
    expect(await readdir(directory)).toEqual(['seam.lpb']);
    expect(await readFile(path.join(directory, 'seam.lpb'), 'utf8')).toBe('previous');
  });

  it('fails prepare when the encoder cannot write its end (the footer), and abort then leaves the previous file alone', async () => {
    await writeFile(path.join(directory, 'seam.lpb'), 'previous');
    failFooter = new Error('footer failed');
    const writer = await sinkFor().open(context('run-footer'));
    await writer.writeRows(PAGE_1);
    await expect(writer.prepare()).rejects.toThrow('footer failed');
    await expect(writer.publish()).rejects.toMatchObject({ code: 'internal_error', format: 'lpb' });
    await writer.abort();
    expect(await readdir(directory)).toEqual(['seam.lpb']);
    expect(await readFile(path.join(directory, 'seam.lpb'), 'utf8')).toBe('previous');
  });

  it("sweeps a dead run's temp file under the format's template, keeps a live run's, and names errors by the format", async () => {
    const sink = sinkFor({ path: '{name}/{date}.lpb' });
    await mkdir(path.join(directory, 'seam'), { recursive: true });
    const dead = path.join(directory, 'seam', `.2026-06-01.lpb.tilehouse-dead+${tagOf({ pid: DEAD_PID })}.tmp`);
    await writeFile(dead, 'x');
    await utimes(dead, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    const live = await sink.open(context('live'));
    expect(await sink.sweep(logger)).toEqual([dead]);
    expect((await readdir(path.join(directory, 'seam'))).filter((name) => name.includes('tilehouse-live+'))).toHaveLength(1);
    await live.abort();
    expect(() => sinkFor({ path: '{nope}.lpb' })).toThrow(
      expect.objectContaining({ code: 'path_invalid', format: 'lpb', message: expect.stringContaining('lpb path "{nope}.lpb": unknown placeholder {nope}') }),
    );
    await writeFile(path.join(directory, 'blocker'), '');
    const blocked = sinkFor({ path: 'blocker/{name}.lpb' });
    await expect(blocked.checkAccess({ jobName: 'seam' } as never)).rejects.toMatchObject({
      code: 'target_unwritable',
      format: 'lpb',
      message: expect.stringContaining('LPB files cannot be written there'),
    });
  });

  it('through its descriptor: windows get the default {date} path, and a window is held only while its manifest matches its file', async () => {
    const lpb = kind(directory);
    const windowed = lpb.forWindows({ type: TYPE } as SinkConfig, 0, jobWith({ type: TYPE }));
    expect(windowed).toEqual({ sink: { type: TYPE, path: '{name}/{date}.lpb' }, problems: [] });
    expect(lpb.forWindows({ type: TYPE, path: '{name}.lpb' } as SinkConfig, 0, jobWith({ type: TYPE })).problems).toHaveLength(1);
    expect(lpb.resumeRefusal(jobWith({ type: TYPE }), environment)).toBe(
      'backfill: --resume tells a finished LPB window by its manifest: set manifest: true on sinks[0] of seam (then run once without --resume)',
    );

    const config = { ...(windowed.sink as LpbConfig), manifest: true };
    const job = jobWith(config);
    const sink = (await lpb.build(config as SinkConfig, 0, job, environment, {})) as FileSink;
    await runOnce(sink, 'w1', { window: { from: '2026-06-01', to: '2026-06-02' } });
    await runOnce(sink, 'w2', { window: { from: '2026-06-02', to: '2026-06-03' } });
    const [reader] = await lpb.windowStateReaders(job, [sink], environment, {}, logger);
    const windows = [
      { from: '2026-06-01', to: '2026-06-02' },
      { from: '2026-06-02', to: '2026-06-03' },
      { from: '2026-06-03', to: '2026-06-04' },
    ];
    expect([...(await reader!.heldWindows(windows)).done].sort()).toEqual(['2026-06-01', '2026-06-02']);
    // A file replaced without its manifest (a run that died between the renames) is not held.
    await writeFile(path.join(directory, 'seam', '2026-06-02.lpb'), 'torn');
    expect([...(await reader!.heldWindows(windows)).done]).toEqual(['2026-06-01']);
  });
});

describeWithFakeGcs('the FileFormat seam on gs:// (a length-prefixed binary format)', (gcs) => {
  const sinkFor = (bucket: string, config: Partial<LpbConfig> = {}) =>
    new FileSink(lpbFormat, {
      config: { type: TYPE, manifest: true, path: `gs://${bucket}/exports/{name}.lpb`, ...config },
      directory: 'out',
      timezone: 'UTC',
      storageClient: gcs.storage,
    });

  it("uploads the binary bytes with the format's content type, publishes object and manifest, plans from the tail by ranged reads", async () => {
    trace.ranges = [];
    const bucket = await gcs.newBucket();
    const sink = sinkFor(bucket);
    const { result } = await runOnce(sink, 'run-gs');
    const file = gcs.storage.bucket(bucket).file('exports/seam.lpb');
    const [bytes] = await file.download();
    expect(decode(bytes)).toEqual({ rows: EXPECTED, footer: { headers: ['id', 'title'], rows: 4 } });
    expect((await file.getMetadata())[0].contentType).toBe('application/x-lpb');
    const [manifestBytes] = await gcs.storage.bucket(bucket).file('exports/seam.lpb.manifest.json').download();
    expect(JSON.parse(manifestBytes.toString('utf8'))).toMatchObject({
      file: 'seam.lpb',
      rows: 4,
      bytes: bytes.length,
      gzip: false,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(result).toMatchObject({ sink: TYPE, target: `gs://${bucket}/exports/seam.lpb`, rows: 4 });
    expect((await gcs.storage.bucket(bucket).getFiles())[0].map((object) => object.name).sort()).toEqual([
      'exports/seam.lpb',
      'exports/seam.lpb.manifest.json',
    ]);

    expect(await sink.plan(context('plan'))).toMatchObject({ action: 'unchanged' });
    expect(await sink.plan(context('plan', { columns: [columns[0]!] }))).toMatchObject({ action: 'change', details: ['- title'] });
    expect(trace.ranges.every((range) => range !== undefined && range.start > 0)).toBe(true);
  });

  it("keeps the previous object and leaves no temp object on abort after prepare; sweeps a dead run's temp object", async () => {
    const bucket = await gcs.newBucket();
    const b = gcs.storage.bucket(bucket);
    await b.file('exports/seam.lpb').save('previous', { resumable: false });
    const deadTag = tagOf({ pid: DEAD_PID });
    await b.file(`exports/.seam.lpb.tilehouse-dead+${deadTag}.tmp`).save('x', { resumable: false, metadata: { metadata: { [OWNER_METADATA_KEY]: deadTag } } });
    const sink = sinkFor(bucket);
    expect(await sink.sweep(logger)).toEqual([`gs://${bucket}/exports/.seam.lpb.tilehouse-dead+${deadTag}.tmp`]);
    const writer = await sink.open(context('run-aborted'));
    await writer.writeRows(PAGE_1);
    await writer.prepare();
    expect((await b.getFiles())[0]).toHaveLength(3); // target + temp object + temp manifest
    await writer.abort();
    expect((await b.getFiles())[0].map((object) => object.name)).toEqual(['exports/seam.lpb']);
    expect(String((await b.file('exports/seam.lpb').download())[0])).toBe('previous');
  });

  it('reads window state from the manifest objects beside the window objects', async () => {
    const bucket = await gcs.newBucket();
    const lpb = kind('out', gcs.storage);
    const config: LpbConfig = { type: TYPE, manifest: true, path: `gs://${bucket}/w/{date}.lpb` };
    const job = jobWith(config);
    const sink = (await lpb.build(config as SinkConfig, 0, job, environment, {})) as FileSink;
    await runOnce(sink, 'w1', { window: { from: '2026-06-01', to: '2026-06-02' } });
    const [reader] = await lpb.windowStateReaders(job, [sink], environment, {}, logger);
    const held = await reader!.heldWindows([
      { from: '2026-06-01', to: '2026-06-02' },
      { from: '2026-06-02', to: '2026-06-03' },
    ]);
    expect([...held.done]).toEqual(['2026-06-01']);
    expect([...held.open]).toEqual([]);
  });
});
