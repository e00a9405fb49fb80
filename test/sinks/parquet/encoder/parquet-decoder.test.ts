import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TypedRow } from '../../../../src/transform/column.js';
import { icebergTypeOf } from '../../../../src/sinks/iceberg/iceberg-schema.js';
import { readParquetRows } from '../../../../src/sinks/parquet/encoder/parquet-decoder.js';
import { ParquetEncoder } from '../../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { icebergPythonOrSkip, readIceberg } from '../../../support/iceberg-readers.js';
import { describeUnless, missing } from '../../../support/skip.js';
import { asText, COLUMNS, rowsOf } from '../../iceberg/iceberg-test-rows.js';

const python = icebergPythonOrSkip();

// Field ids out of column order, and one the file lacks (read as nulls), as an Iceberg reader binds them.
const DECODED = [...COLUMNS.map((column, index) => ({ ...column, fieldId: 10 + index })).reverse(), { name: 'absent', type: 'STRING' as const, fieldId: 99 }];
const ROWS = rowsOf(0, 300);
const expected = ROWS.map((row) => [...asText(row), null]);
/** Decoded rows (columns in DECODED's order) back in COLUMNS' order as the readers' text, the absent column last. */
const decodedText = (rows: readonly TypedRow[]) => rows.map((row) => [...asText(row.slice(0, COLUMNS.length).reverse()), row[COLUMNS.length]]);

describeUnless(missing('the Iceberg readers (pyarrow)', python))('readParquetRows (files pyarrow wrote, and this encoder)', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-parquet-decoder-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  const cases = ['snappy', 'gzip', 'zstd', 'none'].flatMap((compression) =>
    [true, false].flatMap((dictionary) => ['1.0', '2.0'].map((pageVersion) => ({ compression, dictionary, pageVersion }))),
  );
  it.each(cases)(
    'reads back every row pyarrow wrote: $compression, dictionary $dictionary, data pages $pageVersion',
    async ({ compression, dictionary, pageVersion }) => {
      const path = join(directory, `${compression}-${dictionary}-${pageVersion}.parquet`);
      const written = await readIceberg(python!, 'pyarrow-write', {
        path,
        fields: COLUMNS.map((column, index) => ({ name: column.name, type: icebergTypeOf(column.type), fieldId: 10 + index })),
        rows: ROWS.map(asText),
        // Small pages and row groups: several of each per column.
        options: { compression, use_dictionary: dictionary, data_page_version: pageVersion, data_page_size: 512, row_group_size: 120 },
      });
      expect(written.rowGroups).toBe(3);
      expect(written.encodings.includes('RLE_DICTIONARY') || written.encodings.includes('PLAIN_DICTIONARY')).toBe(dictionary);
      const rows = readParquetRows(await readFile(path), DECODED, path);
      expect(decodedText(rows)).toEqual(expected);
    },
  );

  it("reads back this encoder's files (PLAIN, definition levels, several row groups)", async () => {
    const encoder = new ParquetEncoder(
      COLUMNS.map((column, index) => ({ ...column, fieldId: 10 + index })),
      { rowGroupBytes: 4_000 },
    );
    const bytes = Buffer.concat([...encoder.addRows(ROWS.slice(0, 150)), ...encoder.addRows(ROWS.slice(150)), ...encoder.finish()]);
    expect(decodedText(readParquetRows(bytes, DECODED))).toEqual(expected);
  });
});
