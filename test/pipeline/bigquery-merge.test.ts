// writeMode: merge end to end: `tilehouse run` against the sandbox API into the emulator (behind
// the copy proxy, which the MERGE does not need). The source changes between runs by serving
// another dataset: sandboxes with other seeds and sizes, so the same incident numbers come back
// with other values, new numbers appear, and a smaller export leaves numbers out (which a merge
// keeps as they were and a replace would drop).
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { readTable, stagingTables } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { makeTempDir } from '../support/temp-dir.js';

const TABLE = 'incident_states';
const query = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Severity', formula: '[incident.severity]', dataType: 'number', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

function job(sink: Record<string, unknown>): Record<string, unknown> {
  return {
    name: TABLE,
    tile: SANDBOX_TILE,
    query,
    columns: { Number: { type: 'INT64' } },
    // The CSV file of the same run is what the BigQuery table must agree with.
    sinks: [{ type: 'bigquery', table: TABLE, writeMode: 'merge', ...sink }, { type: 'csv' }],
  };
}

describeWithEmulator('tilehouse run with writeMode: merge', (endpoint) => {
  let before: Sandbox;
  let after: Sandbox;
  let smaller: Sandbox;
  let proxy: EmulatorWithCopyJobs;
  let client: BigQuery;
  let root: string;
  const dataset = uniqueDatasetId('merge_e2e');

  beforeAll(async () => {
    before = await startSandbox({ incidents: 40, seed: 1 });
    after = await startSandbox({ incidents: 65, seed: 2 });
    smaller = await startSandbox({ incidents: 30, seed: 3 });
    proxy = await startEmulatorWithCopyJobs(endpoint);
    client = proxy.client();
    root = await makeTempDir();
  });
  afterAll(async () => {
    await before?.close();
    await after?.close();
    await smaller?.close();
    await proxy?.close();
    await rm(root, { recursive: true, force: true });
  });

  async function run(sandbox: Sandbox, name: string, sink: Record<string, unknown>) {
    const ws = await writeBigQueryWorkspace(path.join(root, name), sandbox, [job(sink)], { projectId: endpoint.projectId, dataset });
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: sandboxEnv(sandbox),
      seams: { sinkOptions: { bigqueryClient: client } },
    });
    return { result, csv: path.join(ws.outDir, `${TABLE}.csv`) };
  }

  /** number -> "severity|description" of the table, and of a run's CSV file. */
  async function tableRows(): Promise<Map<number, string>> {
    const rows = await readTable(client, { projectId: endpoint.projectId, dataset, table: TABLE }, 'number');
    const numbers = rows.map((row) => Number(row.number));
    expect(new Set(numbers).size).toBe(numbers.length); // each key once
    return new Map(rows.map((row) => [Number(row.number), `${Number(row.severity)}|${String(row.description)}`]));
  }
  async function csvRows(file: string): Promise<Map<number, string>> {
    // The sandbox's descriptions have commas and quotes: a real CSV parse, not a split.
    const [, ...records] = parse(await readFile(file, 'utf8')) as string[][];
    return new Map(records.map(([number, severity, description]) => [Number(number), `${Number(severity)}|${description}`]));
  }

  it('run 2 updates the incidents run 1 wrote to their latest values and inserts the new ones, each once', async () => {
    const first = await run(before, 'run-1', { primaryKey: ['Number'] });
    expect(first.result.exitCode, first.result.stderr).toBe(0);
    const afterFirst = await tableRows();
    expect(afterFirst).toEqual(await csvRows(first.csv));
    expect(afterFirst.size).toBe(40);

    const second = await run(after, 'run-2', { primaryKey: ['number'] });
    expect(second.result.exitCode, second.result.stderr).toBe(0);
    const latest = await csvRows(second.csv);
    // The other seed changed the rows of the same numbers: the merge has something to update.
    expect([...afterFirst].filter(([number, values]) => latest.get(number) !== values).length).toBeGreaterThan(20);
    expect(await tableRows()).toEqual(latest);
    expect((await tableRows()).size).toBe(65);
    expect(await stagingTables(client, dataset)).toEqual([]);

    // Run 3 exports incidents 1-30 only: those take its values, 31-65 keep run 2's.
    const third = await run(smaller, 'run-3', { primaryKey: ['Number'] });
    expect(third.result.exitCode, third.result.stderr).toBe(0);
    const expected = new Map([...latest, ...(await csvRows(third.csv))]);
    expect([...(await csvRows(third.csv)).keys()]).toEqual(Array.from({ length: 30 }, (_, index) => index + 1));
    expect(await tableRows()).toEqual(expected);
  });

  it('a key shared by rows of one run fails the tile (exit 1) naming the key values; the table is unchanged and no staging table is left', async () => {
    const unchanged = await tableRows();
    const { result } = await run(before, 'duplicate', { primaryKey: ['Severity'] });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('bigquery_duplicate_key');
    expect(result.stderr).toMatch(/rows with the same primary key \(severity\) in one run: \(\d+(\.\d+)?\) x\d+/);
    expect(await tableRows()).toEqual(unchanged);
    expect(await stagingTables(client, dataset)).toEqual([]);
  });
});
