import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { ParquetEncoder } from '../../../src/sinks/parquet/encoder/parquet-encoder.js';
import { icebergCatalogsBlocker, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { describeUnless, missing } from '../../support/skip.js';
import { COLUMNS, rowsOf } from './iceberg-test-rows.js';

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

describeUnless(icebergCatalogsBlocker(['jdbc']))(
  "an evolved table's data files carry the field ids of the schema they were written with (JDBC catalog)",
  () => {
    const under = useIcebergCatalog('jdbc');

    it("schema: add: the new run's file carries the old fields' ids and the new field's fresh one, in the tile's column order", async () => {
      const table = { namespace: 'ids', name: 'evolved' };
      const run = (runId: string, columns: typeof COLUMNS, rows: unknown[][]) =>
        writeIcebergRun({ catalog: under.catalog, table, columns, rows: [rows as never], mode: 'append', runId, schema: 'add' });
      await run('before', COLUMNS, rowsOf(0, 2));
      // The tile gained `team` between `title` and `created`: the file keeps the tile's order, each column its field's id.
      const withTeam = [...COLUMNS.slice(0, 3), { name: 'team', type: 'STRING' as const }, ...COLUMNS.slice(3)];
      await run(
        'after',
        withTeam,
        rowsOf(2, 2).map((row) => [...row.slice(0, 3), 'blue', ...row.slice(3)]),
      );
      const data = join(under.warehouse, 'ids', 'evolved', 'data');
      const fileOf = async (runId: string) => join(data, (await readdir(data)).find((name) => name.startsWith(`${runId}-`))!);
      const idsOf = async (runId: string) =>
        (await readIceberg(python!, 'parquet-fields', { path: await fileOf(runId) })).fields.map((field) => [field.name, field.fieldId]);
      expect(await idsOf('before')).toEqual([
        ['id', 1],
        ['amount', 2],
        ['title', 3],
        ['created', 4],
        ['day', 5],
        ['score', 6],
        ['_run_id', 7],
        ['_extracted_at', 8],
      ]);
      expect(await idsOf('after')).toEqual([
        ['id', 1],
        ['amount', 2],
        ['title', 3],
        ['team', 9],
        ['created', 4],
        ['day', 5],
        ['score', 6],
        ['_run_id', 7],
        ['_extracted_at', 8],
      ]);
    }, 120_000);
  },
);
