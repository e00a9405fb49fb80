import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { appendLedgerRow, doneWindows, RUN_LEDGER_FIELDS, RUN_LEDGER_TABLE, schemaHashOf, type LedgerRow } from '../../../src/sinks/bigquery/run-ledger.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../../support/bigquery-emulator.js';

const retry = { limits: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 }, logger: pino({ level: 'silent' }) };
/** The end of a window on a UTC calendar: midnight starting its `to` day. */
const endOf = (day: string) => Date.parse(`${day}T00:00:00Z`);
const doneOf = async (...args: Parameters<typeof doneWindows>) => (await doneWindows(...args)).done;

describe('run ledger helpers', () => {
  it('hashes columns by name and type, in order', () => {
    const a = schemaHashOf([
      { name: 'x', type: 'INT64' },
      { name: 'y', type: 'STRING' },
    ]);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(
      schemaHashOf([
        { name: 'y', type: 'STRING' },
        { name: 'x', type: 'INT64' },
      ]),
    ).not.toBe(a);
    expect(
      schemaHashOf([
        { name: 'x', type: 'FLOAT64' },
        { name: 'y', type: 'STRING' },
      ]),
    ).not.toBe(a);
  });
});

describeWithEmulator('the _tilehouse_runs ledger', (endpoint) => {
  let table = '';
  const row = (overrides: Partial<LedgerRow>): LedgerRow => ({
    runId: 'bf-1-20260601',
    job: 'daily',
    tile: 't',
    target: `${table}$20260601`,
    status: 'succeeded',
    published: true,
    rows: 10,
    window: { from: '2026-06-01', to: '2026-06-02' },
    schemaHash: 'abc',
    jobId: 'j1',
    loadJobId: 'l1',
    startedAt: new Date('2026-06-02T06:00:00Z'),
    durationMs: 1200,
    ...overrides,
  });

  it('creates the table on first use, appends one row per call (an identical retry is not appended twice), and tells the done windows', async () => {
    const client = localBigQueryClient(endpoint);
    const datasetId = uniqueDatasetId();
    await client.createDataset(datasetId);
    const dataset = { projectId: endpoint.projectId, datasetId, location: undefined };
    table = `${endpoint.projectId}.${datasetId}.daily`;
    expect(await doneOf(client, dataset, 'daily', 'daily', retry, endOf)).toEqual(new Set());

    await appendLedgerRow(client, dataset, row({}), retry);
    await appendLedgerRow(client, dataset, row({}), retry);
    await appendLedgerRow(
      client,
      dataset,
      row({
        runId: 'bf-1-20260602',
        window: { from: '2026-06-02', to: '2026-06-03' },
        status: 'failed',
        published: false,
        rows: 0,
        errorCode: 'export_api_error',
      }),
      retry,
    );
    await appendLedgerRow(client, dataset, row({ runId: 'x', job: 'other' }), retry);
    // Another table of the same job (a second BigQuery sink) is not this table's ledger.
    await appendLedgerRow(client, dataset, row({ runId: 'y', target: `${table}_copy$20260602`, window: { from: '2026-06-02', to: '2026-06-03' } }), retry);

    const [rows] = await client.query({
      query: `SELECT run_id, status, row_count, error_code, CAST(window_from AS STRING) AS w FROM \`${endpoint.projectId}.${datasetId}.${RUN_LEDGER_TABLE}\` WHERE job = 'daily' AND run_id LIKE 'bf%' ORDER BY run_id`,
    });
    expect(rows).toEqual([
      { run_id: 'bf-1-20260601', status: 'succeeded', row_count: 10, error_code: null, w: '2026-06-01' },
      { run_id: 'bf-1-20260602', status: 'failed', row_count: 0, error_code: 'export_api_error', w: '2026-06-02' },
    ]);
    expect(await doneOf(client, dataset, 'daily', 'daily', retry, endOf)).toEqual(new Set(['2026-06-01']));

    // The failed window re-run and succeeded: its latest row wins.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await appendLedgerRow(client, dataset, row({ runId: 'bf-2-20260602', window: { from: '2026-06-02', to: '2026-06-03' } }), retry);
    expect(await doneOf(client, dataset, 'daily', 'daily', retry, endOf)).toEqual(new Set(['2026-06-01', '2026-06-02']));
  });

  it('records an open window and never counts it as done; a later closed export of the day does count', async () => {
    const client = localBigQueryClient(endpoint);
    const datasetId = uniqueDatasetId();
    await client.createDataset(datasetId);
    const dataset = { projectId: endpoint.projectId, datasetId, location: undefined };
    table = `${endpoint.projectId}.${datasetId}.daily`;
    await appendLedgerRow(client, dataset, row({ windowOpen: false }), retry);
    await appendLedgerRow(client, dataset, row({ runId: 'r-20260602', window: { from: '2026-06-02', to: '2026-06-03' }, windowOpen: true }), retry);
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry, endOf)).toEqual({ done: new Set(['2026-06-01']), open: new Set(['2026-06-02']) });
    const [rows] = await client.query({ query: `SELECT run_id, window_open FROM \`${endpoint.projectId}.${datasetId}.${RUN_LEDGER_TABLE}\` ORDER BY run_id` });
    expect(rows).toEqual([
      { run_id: 'bf-1-20260601', window_open: false },
      { run_id: 'r-20260602', window_open: true },
    ]);

    await new Promise((resolve) => setTimeout(resolve, 5));
    await appendLedgerRow(client, dataset, row({ runId: 's-20260602', window: { from: '2026-06-02', to: '2026-06-03' }, windowOpen: false }), retry);
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry, endOf)).toEqual({ done: new Set(['2026-06-01', '2026-06-02']), open: new Set() });
  });

  it('reads a ledger made before window_open existed (open when recorded before its day ended) and adds the column on the next append', async () => {
    const client = localBigQueryClient(endpoint);
    const datasetId = uniqueDatasetId();
    await client.createDataset(datasetId);
    const dataset = { projectId: endpoint.projectId, datasetId, location: undefined };
    table = `${endpoint.projectId}.${datasetId}.daily`;
    const ledger = `\`${endpoint.projectId}.${datasetId}.${RUN_LEDGER_TABLE}\``;
    // The ledger as an older tilehouse made it, with two rows: one recorded the day after its
    // window (closed), one while its window was still going (today's window, then held for good).
    // (Made before window_open, expired_rows, publish_guard and definition, the four columns added since.)
    const oldFields = RUN_LEDGER_FIELDS.filter((field) => !['window_open', 'expired_rows', 'publish_guard', 'definition'].includes(field.name!));
    expect(oldFields).toHaveLength(RUN_LEDGER_FIELDS.length - 4);
    await client
      .dataset(datasetId)
      .table(RUN_LEDGER_TABLE)
      .create({ schema: { fields: oldFields } });
    const insert = (runId: string, from: string, to: string, recordedAt: string) =>
      client.query({
        query:
          `INSERT INTO ${ledger} (run_id, job, tile, target, status, published, row_count, window_from, window_to, started_at, duration_ms, recorded_at) ` +
          `VALUES ('${runId}', 'daily', 't', '${table}', 'succeeded', TRUE, 5, DATE '${from}', DATE '${to}', TIMESTAMP '${recordedAt}', 1, TIMESTAMP '${recordedAt}')`,
      });
    await insert('old-20260601', '2026-06-01', '2026-06-02', '2026-06-02T06:00:00Z');
    await insert('old-20260602', '2026-06-02', '2026-06-03', '2026-06-02T18:00:00Z');
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry, endOf)).toEqual({ done: new Set(['2026-06-01']), open: new Set(['2026-06-02']) });

    // The next append adds the column to the schema (BigQuery's SQL then sees it; the emulator's
    // does not, so its row goes in without it and is judged by when it was recorded, as old rows).
    await appendLedgerRow(client, dataset, row({ runId: 'new-20260603', window: { from: '2026-06-03', to: '2026-06-04' }, windowOpen: false }), retry);
    await appendLedgerRow(client, dataset, row({ runId: 'new-20990101', window: { from: '2099-01-01', to: '2099-01-02' }, windowOpen: true }), retry);
    const [metadata] = await client.dataset(datasetId).table(RUN_LEDGER_TABLE).getMetadata();
    expect((metadata as { schema: { fields: Array<{ name: string }> } }).schema.fields.map((field) => field.name)).toEqual(
      RUN_LEDGER_FIELDS.map((field) => field.name),
    );
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry, endOf)).toEqual({
      done: new Set(['2026-06-01', '2026-06-03']),
      open: new Set(['2026-06-02', '2099-01-01']),
    });
  });
});
