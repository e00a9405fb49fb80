import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ParquetEncoder } from '../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { describeUnless, missing } from '../../support/skip.js';

const python = icebergPythonOrSkip();

describeUnless(missing('the Iceberg readers (pyarrow)', python))("the Parquet encoder's field ids read by pyarrow (Iceberg readers venv)", () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-field-ids-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("gives pyarrow (the reader pyiceberg binds columns with) each column's PARQUET:field_id", async () => {
    const encoder = new ParquetEncoder([
      { name: 'id', type: 'INT64', fieldId: 1 },
      { name: 'amount', type: 'NUMERIC', fieldId: 12 },
      { name: 'title', type: 'STRING', fieldId: 3 },
      { name: 'created', type: 'TIMESTAMP', fieldId: 2_000_000 },
      { name: 'day', type: 'DATE', fieldId: 5 },
      { name: 'score', type: 'FLOAT64' },
    ]);
    const path = join(directory, 'ids.parquet');
    await writeFile(path, Buffer.concat([...encoder.addRows([[1n, '2.5', 'x', 0, '2024-02-29', 0.5]]), ...encoder.finish()]));
    const { fields } = await readIceberg(python!, 'parquet-fields', { path });
    expect(fields).toEqual([
      { name: 'id', type: 'int64', fieldId: 1 },
      { name: 'amount', type: 'decimal128(38, 9)', fieldId: 12 },
      { name: 'title', type: 'string', fieldId: 3 },
      { name: 'created', type: 'timestamp[us, tz=UTC]', fieldId: 2_000_000 },
      { name: 'day', type: 'date32[day]', fieldId: 5 },
      { name: 'score', type: 'double', fieldId: null },
    ]);
  });
});
