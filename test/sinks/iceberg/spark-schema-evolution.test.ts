// `tilehouse run` into an Iceberg merge table whose tile gains a column (`schema: add`), through
// the JDBC catalog, beside a CSV of each night: `plan` says the change, the second night adds the
// field in its commit, and Spark, pyiceberg and DuckDB read exactly the rows the CSVs say the table
// holds (the first night's rows the second did not touch with a null in the new column). One Spark
// session: slow (minutes), so this is the one Spark read of schema evolution.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SANDBOX_TILE } from '../../../sandbox/index.js';
import { runCli, sandboxEnv, summaryOf } from '../../support/cli-harness.js';
import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { type IcebergSpark, icebergSparkOrSkip, startIcebergSpark } from '../../support/iceberg-spark.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { csvRows, icebergWorkspace, tableState } from './iceberg-cli-support.js';
import { sortedLines } from './iceberg-test-rows.js';

const spark = icebergSparkOrSkip();
const CATALOG = 'tilehouse_spark_evolve';
const TABLE = 'evolve.incidents';
const JOB = 'evolving';
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => String(from + index));

/** Night 1: Number and Description of incidents 1..20; night 2: 11..30, and Status, a column the table lacks. */
function job(night: 1 | 2, schema: 'add' | 'freeze' = 'add') {
  const numbers = night === 1 ? range(1, 20) : range(11, 30);
  return {
    name: JOB,
    tile: SANDBOX_TILE,
    query: {
      items: [
        { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [{ operator: 'in', values: numbers }] },
        { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
        ...(night === 2 ? [{ header: 'Status', formula: '[incident.status]', dataType: 'text', filters: [] }] : []),
      ],
      options: { pageNumber: 0, itemsPerPage: 25, ignoreRepeatedRows: false },
    },
    columns: { Number: { type: 'INT64' } },
    sinks: [
      { type: 'csv', path: '{name}-{runId}.csv' },
      { type: 'iceberg', table: TABLE, writeMode: 'merge', primaryKey: ['Number'], ...(schema === 'add' ? { schema } : {}) },
    ],
  };
}

describeUnless(icebergCatalogsBlocker(['jdbc']) ?? missing('Spark with Iceberg', spark))(
  'schema: add through tilehouse run, read by Spark, pyiceberg and DuckDB (JDBC catalog)',
  () => {
    const fixture = sandboxAndRootForAll({ incidents: 40, now: new Date('2026-07-05T12:00:00Z') });
    const under = useIcebergCatalog('jdbc', { catalogName: CATALOG });
    let session: IcebergSpark | undefined;
    beforeAll(async () => {
      session = await startIcebergSpark(spark!);
      await session.addCatalog(CATALOG, under.sparkCatalog());
    }, 360_000);
    afterAll(async () => {
      await session?.stop();
    });

    it('the second night adds status in its commit; every reader reads the untouched rows of the first with a null status', async () => {
      const ws = await icebergWorkspace(path.join(fixture.root, 'evolving'), fixture.sandbox, [job(1)], {
        catalog: under.settings(),
        location: under.warehouse,
      });
      const env = { ...sandboxEnv(fixture.sandbox), ...under.env() };
      // The CLI runs in this process (runCli), where the environment file's ${...} references are read.
      Object.assign(process.env, under.env());
      const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
      const jobFile = path.join(ws.jobsDir, `${JOB}.yaml`);

      const first = await cli(['run', '--run-id', 'night-1']);
      expect(first.exitCode, first.stderr).toBe(0);

      // The tile gained Status; under freeze the run is refused before anything is written.
      await writeFile(jobFile, stringify(job(2, 'freeze')));
      const frozen = await cli(['run', '--run-id', 'night-2-frozen']);
      expect(frozen.exitCode).toBe(1);
      expect(frozen.stderr).toContain(
        "iceberg_schema_mismatch: Iceberg table evolve.incidents: the tile's columns do not match the table's schema (schema: freeze): added: status (string); to take new columns as new optional fields, set schema: add on this sink; nothing was written",
      );

      await writeFile(jobFile, stringify(job(2)));
      const plan = await cli(['plan']);
      expect(plan.exitCode, plan.stderr).toBe(0);
      expect(plan.stdout).toContain(`  iceberg ${TABLE} (merge): change\n    + status string\n`);

      const second = await cli(['run', '--run-id', 'night-2', '--json']);
      expect(second.exitCode, second.stderr).toBe(0);
      const output = summaryOf(second.stdout, 'run').tiles[0]!.outputs.find((candidate) => candidate.sink === 'iceberg');
      expect(output).toMatchObject({ target: TABLE, rows: 20, details: { schemaAction: 'added:status' } });

      // The table's columns less _extracted_at: number, description, _run_id, status.
      const night1 = (await csvRows(ws, JOB, 'night-1', true)).map((row) => [...row, null]);
      const night2 = (await csvRows(ws, JOB, 'night-2')).map(([number, description, status]) => [number!, description!, 'night-2', status!]);
      const kept = night1.filter((row) => Number(row[0]) < 11);
      expect(kept).toHaveLength(10);
      const expected = sortedLines([...kept, ...night2]);
      expect(night2.some((row) => row[3] !== null && row[3] !== '')).toBe(true);

      const state = await tableState(icebergPython(), under.reader(TABLE));
      expect(state.rows).toEqual(expected);
      expect(state.runIds).toEqual(['night-1', 'night-2']);

      const read = await session!.read(`${CATALOG}.${TABLE}`);
      expect(read.columns).toEqual(['number', 'description', '_run_id', '_extracted_at', 'status']);
      expect(read.types).toEqual(['bigint', 'string', 'string', 'timestamp', 'string']);
      expect(sortedLines(read.rows.map((row) => [row[0]!, row[1]!, row[2]!, row[4]!]))).toEqual(expected);
      expect(read.count).toBe(30);
    }, 900_000);
  },
);
