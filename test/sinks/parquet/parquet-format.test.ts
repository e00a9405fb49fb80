import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { StoredFile } from '../../../src/sinks/files/file-format.js';
import { parquetFormat } from '../../../src/sinks/parquet/parquet-format.js';
import type { Column } from '../../../src/transform/column.js';

const columns: Column[] = [
  { name: 'incident_type', header: 'Incident type', type: 'STRING', sourceDataType: 'text' },
  { name: 'incidents', header: 'Incidents', type: 'INT64', sourceDataType: 'number' },
];
const config = { type: 'parquet', compression: 'snappy' } as const;

function encoded(rows: Array<Array<string | bigint | null>>): Buffer {
  const encoder = parquetFormat.createEncoder(columns, config);
  return Buffer.concat([...encoder.start(), ...encoder.encode(rows), ...encoder.end()].map((chunk) => Buffer.from(chunk as Uint8Array)));
}

/** A stored file over `bytes` that records every range asked of it. */
function stored(bytes: Buffer, location = '/data/lake.parquet'): StoredFile & { ranges: Array<{ start: number; end?: number } | undefined> } {
  const ranges: Array<{ start: number; end?: number } | undefined> = [];
  return {
    location,
    ranges,
    size: () => Promise.resolve(bytes.length),
    read(range) {
      ranges.push(range);
      return Readable.from([bytes.subarray(range?.start ?? 0, range?.end === undefined ? undefined : range.end + 1)]);
    },
  };
}

describe('parquetFormat', () => {
  it('declares the warehouse-safe names, no wrapper and no gzip, and paths ending .parquet', () => {
    expect(parquetFormat.columnNames(columns)).toEqual(['incident_type', 'incidents']);
    expect(parquetFormat.wrapper(config)).toBeUndefined();
    expect(parquetFormat.gzipped(config)).toBe(false);
    expect(parquetFormat.defaultPathTemplate(config, false)).toBe('{name}.parquet');
    expect(parquetFormat.defaultPathTemplate(config, true)).toBe('{name}/{date}.parquet');
  });

  it('reads the column names from the footer with two ranged reads of the tail, never the row groups', async () => {
    const rows = Array.from({ length: 20_000 }, (_, index) => [`type ${index % 7}`, BigInt(index)]);
    const bytes = encoded(rows);
    const file = stored(bytes);
    expect(await parquetFormat.readColumns(file, config)).toEqual(['incident_type', 'incidents']);
    expect(file.ranges).toHaveLength(2);
    expect(file.ranges[0]).toEqual({ start: bytes.length - 8, end: bytes.length - 1 });
    const footerStart = file.ranges[1]!.start;
    expect(bytes.length - footerStart).toBeLessThan(2_000);
  });

  it("reads an empty result's file (schema, no row group)", async () => {
    expect(await parquetFormat.readColumns(stored(encoded([])), config)).toEqual(['incident_type', 'incidents']);
  });

  it('refuses, naming the file, an empty file, a file cut short and a footer longer than the file: target_unreadable, as a CSV target', async () => {
    const bytes = encoded([['a', 1n]]);
    await expect(parquetFormat.readColumns(stored(Buffer.alloc(0)), config)).rejects.toMatchObject({
      code: 'target_unreadable',
      format: 'parquet',
      message: 'parquet /data/lake.parquet: the existing file cannot be read as Parquet: 0 bytes, a Parquet file has at least 12',
    });
    await expect(parquetFormat.readColumns(stored(bytes.subarray(0, bytes.length - 3), 'gs://b/x.parquet'), config)).rejects.toMatchObject({
      code: 'target_unreadable',
      targetKind: 'gcs',
      message: expect.stringMatching(/^parquet gs:\/\/b\/x\.parquet: the existing file cannot be read as Parquet: it ends with .*, not "PAR1"$/),
    });
    const lying = Buffer.from(bytes);
    lying.writeUInt32LE(bytes.length, bytes.length - 8);
    await expect(parquetFormat.countRows(stored(lying), config)).rejects.toMatchObject({
      code: 'target_unreadable',
      message: expect.stringMatching(/its footer is \d+ bytes but the file is \d+/),
    });
  });
});
