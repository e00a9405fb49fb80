import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileWriteError, FileWriterClosedError } from '../../../src/sinks/stores/store-errors.js';
import { formatOwnerTag } from '../../../src/temp-owner.js';
import type { TypedRow } from '../../../src/transform/column.js';
import { column, commit, listEntries, makeContext, makeSink, parseCsv, readText } from './csv-test-support.js';
import { tempDirEachTest } from '../../support/temp-dir-hooks.js';

const columns = [
  column('Number', 'INT64'),
  column('Ratio', 'FLOAT64'),
  column('Amount', 'NUMERIC'),
  column('Status, text', 'STRING'),
  column('Created', 'TIMESTAMP'),
  column('Day', 'DATE'),
];

const rows: TypedRow[] = [
  [9007199254740993n, 12.5, '-0.000000001', 'resolved', Date.parse('2024-02-01T10:00:00.123Z'), '2024-02-01'],
  [null, null, null, null, null, null],
  [-1n, 1e21, '99999999999999999999999999999', '', 0, '0001-01-01'],
  [0n, -0, '0', 'say "hi",\r\nbye', -62_135_596_800_000, '9999-12-31'],
];

const directory = tempDirEachTest('tilehouse-csv-');

describe('CsvSink', () => {
  it('writes a header of the original headers and one record per row, readable by csv-parse', async () => {
    const writer = await makeSink(directory.path).open(makeContext(columns));
    await writer.writeRows(rows.slice(0, 2));
    await writer.writeRows(rows.slice(2));
    const result = await commit(writer);

    const target = join(directory.path, 'weekly_incidents.csv');
    expect(result).toEqual({ sink: 'csv', target, rows: 4, details: { bytes: (await stat(target)).size, gzip: false } });
    expect(parseCsv(await readText(target))).toEqual([
      ['Number', 'Ratio', 'Amount', 'Status, text', 'Created', 'Day'],
      ['9007199254740993', '12.5', '-0.000000001', 'resolved', '2024-02-01T10:00:00.123Z', '2024-02-01'],
      [null, null, null, null, null, null],
      ['-1', '1e+21', '99999999999999999999999999999', '', '1970-01-01T00:00:00.000Z', '0001-01-01'],
      ['0', '0', '0', 'say "hi",\r\nbye', '0001-01-01T00:00:00.000Z', '9999-12-31'],
    ]);
  });

  it('writes RFC 4180 text: UTF-8 without BOM, CRLF, quotes only where needed, "" for the empty string', async () => {
    const writer = await makeSink(directory.path).open(makeContext([column('A', 'STRING'), column('B', 'STRING')]));
    await writer.writeRows([
      ['plain', 'ünï 🔥'],
      ['', null],
      [null, 'a,b'],
      ['x"y', 'line\nbreak'],
    ]);
    await commit(writer);
    const bytes = await readFile(join(directory.path, 'weekly_incidents.csv'));
    expect(bytes.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))).toBe(false);
    expect(bytes.toString('utf8')).toBe('A,B\r\nplain,ünï 🔥\r\n"",\r\n,"a,b"\r\n"x""y","line\nbreak"\r\n');
  });

  it('writes only the header for an export without rows', async () => {
    const writer = await makeSink(directory.path).open(makeContext(columns));
    const result = await commit(writer);
    expect(result.rows).toBe(0);
    expect(await readText(result.target)).toBe('Number,Ratio,Amount,"Status, text",Created,Day\r\n');
  });

  it('creates the directories a path template names', async () => {
    const writer = await makeSink(directory.path, { path: '{tile}/{date}/{name}.csv' }).open(makeContext(columns));
    const result = await commit(writer);
    expect(result.target).toBe(join(directory.path, 'tile-42', '2026-11-21', 'weekly_incidents.csv'));
    expect(await listEntries(directory.path)).toEqual(['tile-42', 'tile-42/2026-11-21', 'tile-42/2026-11-21/weekly_incidents.csv']);
  });

  it('gzips the stream when asked, to the same CSV text', async () => {
    const plain = await makeSink(directory.path).open(makeContext(columns));
    await plain.writeRows(rows);
    const plainResult = await commit(plain);
    const zipped = await makeSink(directory.path, { gzip: true }).open(makeContext(columns));
    await zipped.writeRows(rows);
    const zippedResult = await commit(zipped);

    expect(zippedResult.target).toBe(join(directory.path, 'weekly_incidents.csv.gz'));
    expect(zippedResult.details).toEqual({ bytes: (await stat(zippedResult.target)).size, gzip: true });
    const header = (await readFile(zippedResult.target)).subarray(0, 2);
    expect([...header]).toEqual([0x1f, 0x8b]);
    expect(await readText(zippedResult.target, true)).toBe(await readText(plainResult.target));
  });

  it('streams many rows through backpressure without losing any', async () => {
    const writer = await makeSink(directory.path, { gzip: true }).open(makeContext([column('N', 'INT64'), column('S', 'STRING')]));
    const page: TypedRow[] = Array.from({ length: 5000 }, (_, index) => [BigInt(index), `row ${index} ${'x'.repeat(50)}`]);
    for (let pageNumber = 0; pageNumber < 40; pageNumber++) await writer.writeRows(page);
    const result = await commit(writer);
    expect(result.rows).toBe(200_000);
    const lines = (await readText(result.target, true)).split('\r\n');
    expect(lines).toHaveLength(200_002);
    expect(lines[200_000]).toBe(`4999,row 4999 ${'x'.repeat(50)}`);
  });

  describe('atomic publication', () => {
    it('keeps the target absent until commit, writing to a hidden temp file beside it', async () => {
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      expect(await listEntries(directory.path)).toEqual([`.weekly_incidents.csv.tilehouse-20261121T213005Z-9f2c1a+${formatOwnerTag()}.tmp`]);
      await commit(writer);
      expect(await listEntries(directory.path)).toEqual(['weekly_incidents.csv']);
    });

    it('replaces the previous file only on commit', async () => {
      const target = join(directory.path, 'weekly_incidents.csv');
      await writeFile(target, 'previous run\r\n');
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      expect(await readFile(target, 'utf8')).toBe('previous run\r\n');
      await commit(writer);
      expect(parseCsv(await readText(target))).toHaveLength(5);
    });

    it('on abort leaves the previous file byte-identical and no temp file', async () => {
      const target = join(directory.path, 'weekly_incidents.csv');
      const previous = Buffer.from('Number\r\n1\r\n\u00e9\r\n', 'utf8');
      await writeFile(target, previous);
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      await writer.abort();
      expect((await readFile(target)).equals(previous)).toBe(true);
      expect(await listEntries(directory.path)).toEqual(['weekly_incidents.csv']);
    });

    it('aborts idempotently and refuses further writes', async () => {
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await Promise.all([writer.abort(), writer.abort()]);
      await writer.abort();
      await expect(writer.writeRows(rows)).rejects.toBeInstanceOf(FileWriterClosedError);
      await expect(commit(writer)).rejects.toMatchObject({
        code: 'internal_error',
        format: 'csv',
        message: expect.stringMatching(/^job weekly_incidents: csv \/.*weekly_incidents\.csv: preparing called on a writer that is aborted$/),
      });
      expect(await listEntries(directory.path)).toEqual([]);
    });

    it('does nothing on abort after a successful commit', async () => {
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      const result = await commit(writer);
      await writer.abort();
      expect(parseCsv(await readText(result.target))).toHaveLength(5);
    });

    it('fails in prepare with target_is_directory when a directory is at the target, and abort then cleans up', async () => {
      // A directory where the file should go: rename(2) would refuse to replace it, so phase 1 refuses first.
      await mkdir(join(directory.path, 'weekly_incidents.csv', 'keep'), { recursive: true });
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      const prepared = writer.prepare();
      await expect(prepared).rejects.toBeInstanceOf(FileWriteError);
      await expect(prepared).rejects.toMatchObject({ code: 'target_is_directory', message: expect.stringContaining('weekly_incidents') });
      await expect(writer.publish()).rejects.toMatchObject({ code: 'internal_error' });
      await writer.abort();
      expect(await listEntries(directory.path)).toEqual(['weekly_incidents.csv', 'weekly_incidents.csv/keep']);
    });

    it('after prepare the target still holds the previous bytes and the temp file holds the complete run', async () => {
      const target = join(directory.path, 'weekly_incidents.csv');
      const previous = Buffer.from('Number\r\nprevious\r\n', 'utf8');
      await writeFile(target, previous);
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      await writer.prepare();
      expect((await readFile(target)).equals(previous)).toBe(true);
      const temps = (await listEntries(directory.path)).filter((name) => name !== 'weekly_incidents.csv');
      expect(temps).toHaveLength(1);
      const prepared = await readFile(join(directory.path, temps[0]!));
      const result = await writer.publish();
      expect((await readFile(target)).equals(prepared)).toBe(true);
      expect(parseCsv(prepared.toString('utf8'))).toHaveLength(rows.length + 1);
      expect(result.details).toEqual({ bytes: prepared.length, gzip: false });
      expect(await listEntries(directory.path)).toEqual(['weekly_incidents.csv']);
    });

    it('after prepare of a gzip run the temp file is a complete gzip stream', async () => {
      const writer = await makeSink(directory.path, { gzip: true }).open(makeContext(columns));
      await writer.writeRows(rows);
      await writer.prepare();
      const [temp] = await listEntries(directory.path);
      // gunzipSync throws on a truncated stream: prepare must have ended and flushed gzip.
      expect(parseCsv(await readText(join(directory.path, temp!), true))).toHaveLength(rows.length + 1);
      await writer.abort();
      expect(await listEntries(directory.path)).toEqual([]);
    });

    it('refuses publish before prepare, and changes nothing', async () => {
      const target = join(directory.path, 'weekly_incidents.csv');
      await writeFile(target, 'previous\r\n');
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      await expect(writer.publish()).rejects.toMatchObject({ code: 'internal_error' });
      expect(await readFile(target, 'utf8')).toBe('previous\r\n');
      // The refused publish did not break the writer: it can still be prepared and published.
      await commit(writer);
      expect(parseCsv(await readText(target))).toHaveLength(rows.length + 1);
    });

    it('refuses a second prepare and a second publish', async () => {
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.prepare();
      await expect(writer.prepare()).rejects.toMatchObject({ code: 'internal_error' });
      await expect(writer.writeRows(rows)).rejects.toMatchObject({ code: 'internal_error' });
      await writer.publish();
      await expect(writer.publish()).rejects.toMatchObject({ code: 'internal_error' });
    });

    it('abort after prepare removes the temp file and leaves the previous file byte-identical', async () => {
      const target = join(directory.path, 'weekly_incidents.csv');
      const previous = Buffer.from('Number\r\n1\r\n', 'utf8');
      await writeFile(target, previous);
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      await writer.prepare();
      expect(await listEntries(directory.path)).toHaveLength(2);
      await writer.abort();
      expect((await readFile(target)).equals(previous)).toBe(true);
      expect(await listEntries(directory.path)).toEqual(['weekly_incidents.csv']);
      await expect(writer.publish()).rejects.toMatchObject({ code: 'internal_error' });
      expect((await readFile(target)).equals(previous)).toBe(true);
    });

    it('abort while prepare is running waits for it, then removes the temp file', async () => {
      const writer = await makeSink(directory.path).open(makeContext(columns));
      await writer.writeRows(rows);
      const prepared = writer.prepare();
      await writer.abort();
      await prepared;
      expect(await listEntries(directory.path)).toEqual([]);
      await expect(writer.publish()).rejects.toMatchObject({ code: 'internal_error' });
    });

    it('refuses a second writer on the same temp file (two sinks with one path)', async () => {
      const first = await makeSink(directory.path).open(makeContext(columns));
      await expect(makeSink(directory.path).open(makeContext(columns))).rejects.toMatchObject({
        code: 'write_failed',
        message: expect.stringContaining('another sink'),
      });
      await first.abort();
    });

    it('stops writing when the run is cancelled', async () => {
      const controller = new AbortController();
      const writer = await makeSink(directory.path).open(makeContext(columns, { signal: controller.signal }));
      controller.abort(new Error('shutting down'));
      await expect(writer.writeRows(rows)).rejects.toThrow('shutting down');
      await writer.abort();
      expect(await listEntries(directory.path)).toEqual([]);
    });
  });
});
