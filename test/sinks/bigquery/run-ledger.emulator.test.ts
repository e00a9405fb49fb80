import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { appendLedgerRow, doneWindows, parseBigQueryTarget, RUN_LEDGER_TABLE, schemaHashOf, type LedgerRow } from '../../../src/sinks/bigquery/run-ledger.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../../support/bigquery-emulator.js';

const retry = { limits: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20 }, logger: pino({ level: 'silent' }) };

describe('run ledger helpers', () => {
  it('parses BigQuery targets (with a partition, a domain-scoped project) and refuses file paths', () => {
    expect(parseBigQueryTarget('my-proj.sales.daily$20260601')).toEqual({ projectId: 'my-proj', datasetId: 'sales', tableId: 'daily' });
    expect(parseBigQueryTarget('example.com:proj.d.t')).toEqual({ projectId: 'example.com:proj', datasetId: 'd', tableId: 't' });
    expect(parseBigQueryTarget('/var/lib/out/a.csv')).toBeUndefined();
  });

  it('hashes columns by name and type, in order', () => {
    const a = schemaHashOf([{ name: 'x', type: 'INT64' }, { name: 'y', type: 'STRING' }]);
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(schemaHashOf([{ name: 'y', type: 'STRING' }, { name: 'x', type: 'INT64' }])).not.toBe(a);
    expect(schemaHashOf([{ name: 'x', type: 'FLOAT64' }, { name: 'y', type: 'STRING' }])).not.toBe(a);
  });
});

describeWithEmulator('the _tilehouse_runs ledger', (endpoint) => {
  let table = '';
  const row = (overrides: Partial<LedgerRow>): LedgerRow => ({
    runId: 'bf-1-20260601', job: 'daily', tile: 't', target: `${table}$20260601`, status: 'succeeded', published: true, rows: 10,
    window: { from: '2026-06-01', to: '2026-06-02' }, schemaHash: 'abc', jobId: 'j1', loadJobId: 'l1', startedAt: new Date('2026-06-02T06:00:00Z'), durationMs: 1200,
    ...overrides,
  });

  it('creates the table on first use, appends one row per call (an identical retry is not appended twice), and tells the done windows', async () => {
    const client = localBigQueryClient(endpoint);
    const datasetId = uniqueDatasetId();
    await client.createDataset(datasetId);
    const dataset = { projectId: endpoint.projectId, datasetId, location: undefined };
    table = `${endpoint.projectId}.${datasetId}.daily`;
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry)).toEqual(new Set());

    await appendLedgerRow(client, dataset, row({}), retry);
    await appendLedgerRow(client, dataset, row({}), retry);
    await appendLedgerRow(client, dataset, row({ runId: 'bf-1-20260602', window: { from: '2026-06-02', to: '2026-06-03' }, status: 'failed', published: false, rows: 0, errorCode: 'export_api_error' }), retry);
    await appendLedgerRow(client, dataset, row({ runId: 'x', job: 'other' }), retry);
    // Another table of the same job (a second BigQuery sink) is not this table's ledger.
    await appendLedgerRow(client, dataset, row({ runId: 'y', target: `${table}_copy$20260602`, window: { from: '2026-06-02', to: '2026-06-03' } }), retry);

    const [rows] = await client.query({ query: `SELECT run_id, status, row_count, error_code, CAST(window_from AS STRING) AS w FROM \`${endpoint.projectId}.${datasetId}.${RUN_LEDGER_TABLE}\` WHERE job = 'daily' AND run_id LIKE 'bf%' ORDER BY run_id` });
    expect(rows).toEqual([
      { run_id: 'bf-1-20260601', status: 'succeeded', row_count: 10, error_code: null, w: '2026-06-01' },
      { run_id: 'bf-1-20260602', status: 'failed', row_count: 0, error_code: 'export_api_error', w: '2026-06-02' },
    ]);
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry)).toEqual(new Set(['2026-06-01']));

    // The failed window re-run and succeeded: its latest row wins.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await appendLedgerRow(client, dataset, row({ runId: 'bf-2-20260602', window: { from: '2026-06-02', to: '2026-06-03' } }), retry);
    expect(await doneWindows(client, dataset, 'daily', 'daily', retry)).toEqual(new Set(['2026-06-01', '2026-06-02']));
  });
});
