import { readdir, rm } from 'node:fs/promises';
import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import type { SinkResult } from '../../src/sinks/sink.js';
import { HARD_DESCRIPTIONS } from '../../sandbox/dataset-vocabulary.js';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { readTable, tableColumns, tableExists, type ReadCell } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace, type BigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv, type CliResult } from '../support/cli-harness.js';
import { makeTempDir } from '../support/temp-dir.js';

const INCIDENTS = 263;
const ITEMS_PER_PAGE = 40;
// Not UTC and not a whole-hour offset: the DATE of an instant depends on the job's zone, and an
// off-by-one-zone bug shows up on many rows instead of hiding behind midnight UTC.
const TIMEZONE = 'America/St_Johns';
const TABLE = 'incident_facts';

const query = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Severity', formula: '[incident.severity]', dataType: 'number', filters: [] },
    // Fractions, and null where a postmortem field is empty or the divisor is 0.
    {
      header: 'Impact per action item',
      formula: '[postmortem_custom.customer_impact_minutes] / [postmortem_custom.action_items]',
      dataType: 'number',
      filters: [],
    },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
    { header: 'Root cause', formula: '[postmortem_custom.custom_key]', dataType: 'text', filters: [] },
    { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    {
      header: 'Impact ended',
      formula: '[incident.created] + [postmortem_custom.customer_impact_minutes] * 60000',
      dataType: 'datetime',
      filters: [],
    },
    { header: 'Created day', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    {
      header: 'Impact ended day',
      formula: '[incident.created] + [postmortem_custom.customer_impact_minutes] * 60000',
      dataType: 'datetime',
      filters: [],
    },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

/** The table the job must produce: column name and type per query item, in order. */
const TABLE_COLUMNS = [
  { name: 'number', type: 'INT64' },
  { name: 'severity', type: 'FLOAT64' },
  { name: 'impact_per_action_item', type: 'FLOAT64' },
  { name: 'description', type: 'STRING' },
  { name: 'root_cause', type: 'STRING' },
  { name: 'created', type: 'TIMESTAMP' },
  { name: 'impact_ended', type: 'TIMESTAMP' },
  { name: 'created_day', type: 'DATE' },
  { name: 'impact_ended_day', type: 'DATE' },
] as const;

function job(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: TABLE,
    tile: SANDBOX_TILE,
    timezone: TIMEZONE,
    query,
    sinks: [{ type: 'bigquery', writeMode: 'replace' }],
    columns: { Number: { type: 'INT64' }, 'Created day': { type: 'DATE' }, 'Impact ended day': { type: 'DATE' } },
    ...overrides,
  };
}

const dayInZone = new Intl.DateTimeFormat('en-CA', { timeZone: TIMEZONE, year: 'numeric', month: '2-digit', day: '2-digit' });

/**
 * A sandbox value as BigQuery should hold it, converted here rather than by src/transform, in
 * the shape `readTable` gives back.
 */
function expectedCell(value: unknown, type: (typeof TABLE_COLUMNS)[number]['type']): ReadCell {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'INT64':
      return BigInt(value as number);
    case 'FLOAT64':
      return value as number;
    case 'STRING':
      return value as string;
    case 'TIMESTAMP':
      return new Date(value as number).toISOString();
    case 'DATE':
      // en-CA writes dates as YYYY-MM-DD.
      return dayInZone.format(new Date(value as number));
  }
}

function expectedRows(sandbox: Sandbox, extra: Record<string, ReadCell> = {}): Record<string, ReadCell>[] {
  const evaluated = sandbox.evaluate(query, SANDBOX_TILE);
  expect(evaluated.dataTypes).toEqual(['number', 'number', 'number', 'text', 'text', 'datetime', 'datetime', 'datetime', 'datetime']);
  return evaluated.rows.map((row) => ({
    ...Object.fromEntries(TABLE_COLUMNS.map((column, index) => [column.name, expectedCell(row[index], column.type)])),
    ...extra,
  }));
}

describeWithEmulator('a tile run from the sandbox into BigQuery', (endpoint) => {
  let sandbox: Sandbox;
  let client: BigQuery;
  let proxy: EmulatorWithCopyJobs;
  let root: string;
  let dataset: string;
  let workspace: BigQueryWorkspace;

  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: INCIDENTS, tokenLifetimeSeconds: 600 });
    // The emulator has no copy jobs (the publish step): a loopback proxy carries them out.
    proxy = await startEmulatorWithCopyJobs(endpoint);
    client = proxy.client();
  });
  afterAll(async () => {
    await sandbox.close();
    await proxy.close();
  });
  beforeEach(async () => {
    root = await makeTempDir();
    dataset = uniqueDatasetId('tilehouse_e2e');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function run(jobs: Array<Record<string, unknown>>, options: { secret?: string } = {}): Promise<CliResult> {
    workspace = await writeBigQueryWorkspace(root, sandbox, jobs, { projectId: endpoint.projectId, dataset }, { itemsPerPage: ITEMS_PER_PAGE });
    return runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(sandbox, options.secret),
      seams: { sinkOptions: { bigqueryClient: client } },
    });
  }

  const select = (orderBy = 'number') => readTable(client, { projectId: endpoint.projectId, dataset, table: TABLE }, orderBy);

  async function leftovers(): Promise<string[]> {
    return readdir(workspace.tempDir).catch(() => []);
  }

  function tileOutputs(result: CliResult): SinkResult[] {
    const finished = result.logs.find((line) => line.msg === 'run finished') as { summary: { tiles: Array<{ outputs: SinkResult[] }> } };
    return finished.summary.tiles.flatMap((tile) => tile.outputs);
  }

  it('loads every row with every typed value equal to the sandbox rows (number, text, datetime, date, null)', async () => {
    const result = await run([job()]);
    expect(result.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(result.exitCode).toBe(0);

    const expected = expectedRows(sandbox);
    expect(expected).toHaveLength(INCIDENTS);
    // The comparison below only means something if each kind of null really occurs.
    for (const name of ['impact_per_action_item', 'root_cause', 'impact_ended', 'impact_ended_day']) {
      expect(
        expected.some((row) => row[name] === null),
        `${name} has nulls`,
      ).toBe(true);
      expect(
        expected.some((row) => row[name] !== null),
        `${name} has values`,
      ).toBe(true);
    }
    expect(expected.some((row) => typeof row.impact_per_action_item === 'number' && !Number.isInteger(row.impact_per_action_item))).toBe(true);

    expect(await tableColumns(client, dataset, TABLE)).toEqual(TABLE_COLUMNS.map((column) => `${column.name} ${column.type}`));
    const loaded = await select();
    expect(loaded).toEqual(expected);
    // The sandbox's awkward texts (quotes, CR/LF, emoji, right-to-left, surrounding spaces) are all there.
    for (const description of HARD_DESCRIPTIONS)
      expect(
        loaded.some((row) => row.description === description),
        JSON.stringify(description),
      ).toBe(true);
    expect(tileOutputs(result)).toEqual([
      {
        sink: 'bigquery',
        target: `${endpoint.projectId}.${dataset}.${TABLE}`,
        rows: INCIDENTS,
        details: {
          jobId: expect.stringMatching(new RegExp(`^tilehouse_${TABLE}_${dataset}_${TABLE}_\\d{8}T\\d{6}Z-[0-9a-f]{6}_publish$`)),
          loadJobId: expect.any(String),
          writeMode: 'replace',
          schemaAction: 'created',
          publishedBy: 'copy',
          sentRows: INCIDENTS,
          loadFileBytes: expect.any(Number),
          rowCountChecked: false,
        },
      },
    ]);
    expect(await leftovers()).toEqual([]);
  });

  it('in replace mode, run twice, holds one copy of the tile', async () => {
    const first = await run([job()]);
    const second = await run([job()]);
    expect([first.exitCode, second.exitCode]).toEqual([0, 0]);
    // Each run is its own load job (the run id is part of the job id).
    expect(tileOutputs(second)[0]?.details).toMatchObject({ schemaAction: 'unchanged' });
    expect(tileOutputs(second)[0]?.details?.jobId).not.toBe(tileOutputs(first)[0]?.details?.jobId);

    expect(await select()).toEqual(expectedRows(sandbox));
  });

  it('in append mode, run twice, holds two copies told apart by _run_id', async () => {
    const appending = job({ sinks: [{ type: 'bigquery', writeMode: 'append' }] });
    const first = await run([appending]);
    const second = await run([appending]);
    expect([first.exitCode, second.exitCode]).toEqual([0, 0]);

    const runIds = [first, second].map((result) => (result.logs.find((line) => line.msg === 'run finished') as { summary: { runId: string } }).summary.runId);
    expect(new Set(runIds).size).toBe(2);
    expect(await tableColumns(client, dataset, TABLE)).toEqual([
      ...TABLE_COLUMNS.map((column) => `${column.name} ${column.type}`),
      '_run_id STRING',
      '_extracted_at TIMESTAMP',
    ]);

    const loaded = await select('_run_id, number');
    expect(loaded).toHaveLength(2 * INCIDENTS);
    for (const runId of runIds) {
      const ofRun = loaded.filter((row) => row._run_id === runId);
      const extractedAt = ofRun[0]?._extracted_at;
      expect(typeof extractedAt).toBe('string');
      expect(ofRun).toEqual(expectedRows(sandbox, { _run_id: runId, _extracted_at: extractedAt as string }));
    }
  });

  it('fails with exit 1 on a wrong secret and creates no table', async () => {
    const result = await run([job()], { secret: 'wrong-secret' });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/auth_invalid_client: .*invalid_client/);
    expect(JSON.stringify(result)).not.toContain('wrong-secret');
    expect(await tableExists(client, dataset, TABLE)).toBe(false);
    expect(await leftovers()).toEqual([]);
  });

  it('appends one _tilehouse_runs row per run after the publish: run id, status, rows, schema hash, job ids; a failed run too', async () => {
    const ok = await run([job()]);
    expect(ok.exitCode).toBe(0);
    const output = tileOutputs(ok)[0]!;
    const runId = (ok.logs.find((line) => line.msg === 'run finished') as { summary: { runId: string } }).summary.runId;
    const ledger = async (id: string) =>
      (
        await client.query({
          query: `SELECT run_id, job, target, status, published, row_count, schema_hash, job_id, load_job_id, error_code FROM \`${endpoint.projectId}.${dataset}._tilehouse_runs\` WHERE run_id = @id`,
          params: { id },
        })
      )[0];
    expect(await ledger(runId)).toEqual([
      {
        run_id: runId,
        job: TABLE,
        target: `${endpoint.projectId}.${dataset}.${TABLE}`,
        status: 'succeeded',
        published: true,
        row_count: INCIDENTS,
        schema_hash: expect.stringMatching(/^[0-9a-f]{16}$/),
        job_id: output.details!.jobId,
        load_job_id: output.details!.loadJobId,
        error_code: null,
      },
    ]);

    const refused = await run([job({ sinks: [{ type: 'bigquery', writeMode: 'replace', schema: 'freeze' }], columns: {} })]);
    expect(refused.exitCode).toBe(1);
    const refusedId = (refused.logs.find((line) => line.msg === 'run finished') as { summary: { runId: string } }).summary.runId;
    expect(await ledger(refusedId)).toMatchObject([{ status: 'failed', published: false, row_count: 0, error_code: 'bigquery_schema_mismatch', job_id: null }]);
  });

  it('fails with exit 1 showing the diff when the tile no longer matches a frozen table, and leaves the table as it was', async () => {
    expect((await run([job()])).exitCode).toBe(0);
    const before = await select();

    // The tile's author renamed a column, dropped another and removed the INT64 override.
    const changedQuery = {
      ...query,
      items: [
        ...query.items.filter((item) => item.header !== 'Root cause' && item.header !== 'Severity'),
        { header: 'Status', formula: '[incident.status]', dataType: 'text', filters: [] },
        { header: 'Severity level', formula: '[incident.severity]', dataType: 'number', filters: [] },
      ],
    };
    const changed = job({
      query: changedQuery,
      sinks: [{ type: 'bigquery', writeMode: 'replace', schema: 'freeze' }],
      columns: { 'Created day': { type: 'DATE' }, 'Impact ended day': { type: 'DATE' } },
    });
    const result = await run([changed]);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/0 succeeded, 1 failed/);
    expect(result.stderr).toContain('bigquery_schema_mismatch');
    expect(result.stderr).toContain(
      `columns no longer match table ${endpoint.projectId}.${dataset}.${TABLE} (schema: freeze): ` +
        'added: status (STRING), severity_level (FLOAT64); removed: severity (FLOAT64), root_cause (STRING); retyped: number INT64 -> FLOAT64',
    );
    expect(result.stderr).toContain('Nothing was loaded.');
    expect(await tableColumns(client, dataset, TABLE)).toEqual(TABLE_COLUMNS.map((column) => `${column.name} ${column.type}`));
    expect(await select()).toEqual(before);
    expect(await leftovers()).toEqual([]);
  });
});
