import { createHash } from 'node:crypto';
import type { BigQuery, TableField } from '@google-cloud/bigquery';
import { apiFailureOf, isDuplicate, isNotFound } from './api-failure.js';
import { withRetry, type RetryContext } from './retry.js';

/**
 * `_tilehouse_runs`: one row per tile run (and backfill window) per BigQuery target, appended in
 * the target's dataset after the publish, whatever its outcome. It is what a consumer or an
 * orchestrator asks "did the run for this window land, and which job wrote it", and what
 * `backfill --resume` reads. Append-only: a re-run adds a row; the latest row of a window wins.
 *
 * Appended with a DML INSERT in a query job whose id is derived from the row (a retry after a lost
 * answer finds its own job: 409, nothing appended twice), never with streaming inserts (rows in
 * the streaming buffer cannot be changed or deleted for up to 90 minutes).
 */

export const RUN_LEDGER_TABLE = '_tilehouse_runs';

export const RUN_LEDGER_FIELDS: TableField[] = [
  { name: 'run_id', type: 'STRING', mode: 'REQUIRED', description: 'The run id (a backfill window: <backfill run id>-YYYYMMDD)' },
  { name: 'job', type: 'STRING', mode: 'REQUIRED', description: 'The tilehouse job (jobs/<job>.yaml)' },
  { name: 'tile', type: 'STRING', mode: 'REQUIRED' },
  { name: 'target', type: 'STRING', mode: 'REQUIRED', description: 'project.dataset.table[$partition]' },
  { name: 'status', type: 'STRING', mode: 'REQUIRED', description: 'succeeded, failed or partially_published (of the whole tile run)' },
  { name: 'published', type: 'BOOL', mode: 'REQUIRED', description: 'Whether this target holds this run' },
  { name: 'row_count', type: 'INT64', mode: 'REQUIRED', description: 'Rows of the run (ROWS is a reserved word in GoogleSQL)' },
  { name: 'window_from', type: 'DATE', mode: 'NULLABLE', description: 'A backfill window: first day' },
  { name: 'window_to', type: 'DATE', mode: 'NULLABLE', description: 'A backfill window: the day after the last' },
  { name: 'schema_hash', type: 'STRING', mode: 'NULLABLE', description: 'SHA-256 (16 hex) of the columns as name:type, in order' },
  { name: 'job_id', type: 'STRING', mode: 'NULLABLE', description: 'The BigQuery job that published the run (copy or query)' },
  { name: 'load_job_id', type: 'STRING', mode: 'NULLABLE' },
  { name: 'error_code', type: 'STRING', mode: 'NULLABLE' },
  { name: 'started_at', type: 'TIMESTAMP', mode: 'REQUIRED' },
  { name: 'duration_ms', type: 'INT64', mode: 'REQUIRED' },
  { name: 'recorded_at', type: 'TIMESTAMP', mode: 'REQUIRED' },
];

export interface LedgerRow {
  runId: string;
  job: string;
  tile: string;
  target: string;
  status: 'succeeded' | 'failed' | 'partially_published';
  published: boolean;
  rows: number;
  window?: { from: string; to: string } | undefined;
  schemaHash?: string | undefined;
  jobId?: string | undefined;
  loadJobId?: string | undefined;
  errorCode?: string | undefined;
  startedAt: Date;
  durationMs: number;
}

export interface LedgerDataset {
  projectId: string;
  datasetId: string;
  location: string | undefined;
}

/** The columns' identity: names and types in order, hashed (a consumer compares, never parses it). */
export function schemaHashOf(columns: ReadonlyArray<{ name: string; type: string }>): string {
  return createHash('sha256')
    .update(columns.map((column) => `${column.name}:${column.type}`).join('\n'))
    .digest('hex')
    .slice(0, 16);
}

/** `project.dataset.table[$partition]` → its parts; undefined for anything else (a CSV path). */
export function parseBigQueryTarget(target: string): { projectId: string; datasetId: string; tableId: string } | undefined {
  const match = /^([a-z][a-z0-9.:-]*[a-z0-9])\.([A-Za-z0-9_]+)\.([A-Za-z0-9_]+)(\$[0-9]+)?$/.exec(target);
  return match === null ? undefined : { projectId: match[1]!, datasetId: match[2]!, tableId: match[3]! };
}

async function ensureLedgerTable(client: BigQuery, dataset: LedgerDataset, retry: RetryContext): Promise<void> {
  const table = client.dataset(dataset.datasetId, { projectId: dataset.projectId }).table(RUN_LEDGER_TABLE);
  try {
    await withRetry('ledger table get', () => table.get(), retry);
    return;
  } catch (error) {
    if (!isNotFound(apiFailureOf(error))) throw error;
  }
  try {
    await withRetry(
      'ledger table create',
      () => table.create({ schema: { fields: RUN_LEDGER_FIELDS }, description: 'One row per tilehouse tile run and target (append-only; the latest row of a run or window wins)' }),
      retry,
    );
  } catch (error) {
    // Another run created it first.
    if (!isDuplicate(apiFailureOf(error))) throw error;
  }
}

function ledgerJobId(row: LedgerRow): string {
  const digest = createHash('sha256').update(JSON.stringify([row.runId, row.job, row.target, row.status, row.window?.from ?? ''])).digest('hex').slice(0, 32);
  return `tilehouse_ledger_${digest}`;
}

/** Appends `row` to `_tilehouse_runs` in its target's dataset (created on first use). */
export async function appendLedgerRow(client: BigQuery, dataset: LedgerDataset, row: LedgerRow, retry: RetryContext): Promise<void> {
  await ensureLedgerTable(client, dataset, retry);
  const table = `\`${dataset.projectId}.${dataset.datasetId}.${RUN_LEDGER_TABLE}\``;
  const query =
    `INSERT INTO ${table} (run_id, job, tile, target, status, published, row_count, window_from, window_to, schema_hash, job_id, load_job_id, error_code, started_at, duration_ms, recorded_at) ` +
    'VALUES (@run_id, @job, @tile, @target, @status, @published = \'true\', CAST(@rows AS INT64), ' +
    "SAFE_CAST(NULLIF(@window_from, '') AS DATE), SAFE_CAST(NULLIF(@window_to, '') AS DATE), NULLIF(@schema_hash, ''), NULLIF(@job_id, ''), NULLIF(@load_job_id, ''), NULLIF(@error_code, ''), " +
    'TIMESTAMP(@started_at), CAST(@duration_ms AS INT64), CURRENT_TIMESTAMP())';
  const params = {
    run_id: row.runId,
    job: row.job,
    tile: row.tile,
    target: row.target,
    status: row.status,
    // Every parameter is a string cast in SQL: the client sends numbers and booleans as JSON
    // numbers and booleans, which the emulator cannot decode (BigQuery reads both alike).
    published: String(row.published),
    rows: String(row.rows),
    window_from: row.window?.from ?? '',
    window_to: row.window?.to ?? '',
    schema_hash: row.schemaHash ?? '',
    job_id: row.jobId ?? '',
    load_job_id: row.loadJobId ?? '',
    error_code: row.errorCode ?? '',
    started_at: row.startedAt.toISOString(),
    duration_ms: String(Math.round(row.durationMs)),
  };
  const jobId = ledgerJobId(row);
  const location = dataset.location ? { location: dataset.location } : {};
  let job;
  try {
    [job] = await withRetry('ledger insert', () => client.createQueryJob({ query, params, jobId, ...location }), retry);
  } catch (error) {
    // The same row's job exists (a retry after a lost answer, a re-run of the same run id and
    // outcome): its row is in the ledger once already, or will be when it ends. BigQuery says 409;
    // the emulator says 500, so the job itself is asked.
    const existing = client.job(jobId, location);
    const found = isDuplicate(apiFailureOf(error)) || (await existing.exists().then(([exists]) => exists, () => false));
    if (!found) throw error;
    job = existing;
  }
  await withRetry('ledger insert result', () => job.getQueryResults({ maxResults: 0 }), retry);
}

/**
 * The backfill windows of `job` (their first days) whose latest ledger row for table `tableId`
 * (any partition) says the run succeeded and was published; for `backfill --resume`. A missing
 * ledger: none.
 */
export async function doneWindows(client: BigQuery, dataset: LedgerDataset, job: string, tableId: string, retry: RetryContext): Promise<Set<string>> {
  const table = `\`${dataset.projectId}.${dataset.datasetId}.${RUN_LEDGER_TABLE}\``;
  const query =
    `SELECT CAST(window_from AS STRING) AS window_from, status, published FROM ${table} ` +
    "WHERE job = @job AND (target = @table OR STARTS_WITH(target, CONCAT(@table, '$'))) AND window_from IS NOT NULL ORDER BY recorded_at";
  // Asked first because a query on a missing table fails as a bad query (400 invalidQuery), not 404.
  const [exists] = await withRetry('ledger table exists', () => client.dataset(dataset.datasetId, { projectId: dataset.projectId }).table(RUN_LEDGER_TABLE).exists(), retry);
  if (!exists) return new Set();
  const [rows] = (await withRetry('ledger read', () => client.query({ query, params: { job, table: `${dataset.projectId}.${dataset.datasetId}.${tableId}` }, ...(dataset.location ? { location: dataset.location } : {}) }), retry)) as unknown as [
    Array<{ window_from: string; status: string; published: boolean }>,
  ];
  const latest = new Map<string, boolean>();
  for (const row of rows) latest.set(row.window_from, row.status === 'succeeded' && row.published);
  return new Set([...latest].filter(([, done]) => done).map(([window]) => window));
}
