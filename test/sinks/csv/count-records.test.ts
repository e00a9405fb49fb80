import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { stringify } from 'csv-stringify/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSV_DIALECT } from '../../../src/sinks/csv/csv-dialect.js';
import { countStoredCsvRecords, CsvRecordCounter } from '../../../src/sinks/csv/count-records.js';
import { localStoredFile } from '../../../src/sinks/stores/local/local-stored-file.js';

/** Fields that stress the count: quoted line breaks (LF and CRLF), doubled quotes, commas, empty strings. */
const AWKWARD = ['plain', 'two\nlines', 'crlf\r\ninside', 'say "hi"', '"', '""', 'a,b', '', 'end with quote"', '\n', 'x\r'];

/** A header and `rows` records as the CSV sink writes them (CSV_DIALECT through csv-stringify). */
function csvText(rows: number): string {
  const records = [['id', 'text', 'note']];
  for (let index = 0; index < rows; index++) records.push([String(index), AWKWARD[index % AWKWARD.length]!, AWKWARD[(index * 7) % AWKWARD.length]!]);
  return stringify(records, CSV_DIALECT);
}

/** Feeds `bytes` in chunks of `size`, each copied into one buffer reused for every chunk, as a scan does. */
function countInChunks(bytes: Buffer, size: number): number {
  const counter = new CsvRecordCounter();
  const reused = Buffer.alloc(size);
  for (let start = 0; start < bytes.length; start += size) {
    const length = bytes.copy(reused, 0, start, Math.min(bytes.length, start + size));
    counter.add(length === size ? reused : reused.subarray(0, length));
    reused.fill(0x22); // what the next read overwrites must not matter: quotes, the worst case
  }
  return counter.dataRecords;
}

describe('CsvRecordCounter', () => {
  const text = Buffer.from(csvText(60));

  it('counts the data records of a file the sink writes, whatever the chunk boundaries (quotes and line breaks split across them)', () => {
    expect(text.includes('"two\nlines"')).toBe(true);
    for (let size = 1; size <= 40; size++) expect(countInChunks(text, size), `chunks of ${size} bytes`).toBe(60);
    expect(countInChunks(text, text.length)).toBe(60);
  });

  it('counts a last record without its line break, and nothing for a header alone or no bytes', () => {
    const counter = new CsvRecordCounter();
    counter.add(Buffer.from('a,b\r\n1,"x\r\n'));
    counter.add(Buffer.from('y"'));
    expect(counter.dataRecords).toBe(1);
    expect(countInChunks(Buffer.from('a,b\r\n'), 2)).toBe(0);
    expect(new CsvRecordCounter().dataRecords).toBe(0);
    const empty = new CsvRecordCounter();
    empty.add(Buffer.alloc(0));
    expect(empty.dataRecords).toBe(0);
  });
});

describe('countStoredCsvRecords', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'tilehouse-count-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  // ~40 bytes a record: several of the scan's 64 KiB buffers, with records across their edges.
  const rows = 9_000;

  it('counts a local file exactly through one buffer used again for every read', async () => {
    const file = path.join(directory, 'night.csv');
    await writeFile(file, csvText(rows));
    const stored = (await localStoredFile(file))!;
    const buffers = new Set<ArrayBufferLike>();
    let reads = 0;
    await stored.scan!((bytes) => {
      buffers.add(bytes.buffer);
      reads += 1;
    });
    expect(reads).toBeGreaterThan(3);
    expect(buffers.size).toBe(1);
    expect(await countStoredCsvRecords(stored, false)).toBe(rows);
  });

  it('counts a gzip file exactly, and a store without a scan through its stream', async () => {
    const file = path.join(directory, 'night.csv.gz');
    await writeFile(file, gzipSync(csvText(rows)));
    expect(await countStoredCsvRecords((await localStoredFile(file))!, true)).toBe(rows);
    const plain = path.join(directory, 'plain.csv');
    await writeFile(plain, `${csvText(rows)}${rows},"no line break\nat the end"`);
    const { scan: _scan, ...streamOnly } = (await localStoredFile(plain))!;
    expect(await countStoredCsvRecords(streamOnly, false)).toBe(rows + 1);
    expect(await countStoredCsvRecords((await localStoredFile(plain))!, false)).toBe(rows + 1);
  });
});
