import { createHash } from 'node:crypto';
import type { BigQuery, TableField } from '@google-cloud/bigquery';
import { apiFailureOf, isDuplicate, isNotFound } from './api-failure.js';
import { withRetry, type RetryContext } from './retry.js';
import { tableName } from './table-name.js';
import { jobDefinitionSchema, type JobDefinition } from '../../value-types/job-definition.js';

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

/**
 * Retry limits of the ledger's own requests (its append and the reads of what a target holds): a
 * ledger row is bookkeeping beside a publish, so a few short tries, not the publish's budget.
 */
export const LEDGER_RETRY_LIMITS = { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 8_000 } as const;

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
  // Last, and NULLABLE: added to ledgers made before it existed (see ensureLedgerTable).
  {
    name: 'window_open',
    type: 'BOOL',
    mode: 'NULLABLE',
    description:
      "A window that had not ended on the source's clock when its export started: never counted as held (NULL: a row written before this column; see doneWindows)",
  },
  {
    name: 'expired_rows',
    type: 'INT64',
    mode: 'NULLABLE',
    description:
      "Rows of the run in partitions past the table's partition expiration, which BigQuery dropped at once; row_count does not count them (NULL: none, or a row written before this column)",
  },
  {
    name: 'publish_guard',
    type: 'STRING',
    mode: 'NULLABLE',
    description:
      'The publish guard at this target: tripped:<rule> (refused, error_code publish_guard_tripped), overridden:<rule> (--allow-shrink), pass, off or unknown; NULL: not judged',
  },
  {
    name: 'definition',
    type: 'STRING',
    mode: 'NULLABLE',
    description:
      "The fingerprint of the job's definition the run ran with, as JSON {fingerprint, parts} (hashes of the query's items and filters, column overrides, sinks); NULL: a row written before this column",
  },
];

const WINDOW_OPEN = 'window_open';
const DEFINITION = 'definition';
const EXPIRED_ROWS = 'expired_rows';
const PUBLISH_GUARD = 'publish_guard';

export interface LedgerRow {
  runId: string;
  job: string;
  tile: string;
  target: string;
  status: 'succeeded' | 'failed' | 'partially_published';
  published: boolean;
  rows: number;
  window?: { from: string; to: string } | undefined;
  /** The window had not ended on the source's clock when its export started. */
  windowOpen?: boolean | undefined;
  /** Rows in partitions past the table's expiration (not in `rows`). */
  expiredRows?: number | undefined;
  /** The publish guard's verdict at this target (see RUN_LEDGER_FIELDS). */
  publishGuard?: string | undefined;
  /** The job definition's fingerprint, as JSON (see RUN_LEDGER_FIELDS). */
  definition?: string | undefined;
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

/**
 * Creates the ledger, or adds the columns a ledger made by an older tilehouse lacks (a NULLABLE
 * column may be added in place; its old rows read NULL there). Two runs adding it at once: the
 * second sees it or fails its patch on the etag and looks again.
 */
async function ensureLedgerTable(client: BigQuery, dataset: LedgerDataset, retry: RetryContext): Promise<void> {
  const table = client.dataset(dataset.datasetId, { projectId: dataset.projectId }).table(RUN_LEDGER_TABLE);
  try {
    const [found] = await withRetry('ledger table get', () => table.get(), retry);
    const fields = ((found.metadata as { schema?: { fields?: TableField[] } }).schema?.fields ?? []) as TableField[];
    const missing = RUN_LEDGER_FIELDS.filter((field) => !fields.some((have) => have.name?.toLowerCase() === field.name!.toLowerCase()));
    if (missing.length > 0) {
      try {
        await withRetry('ledger table add columns', () => table.setMetadata({ schema: { fields: [...fields, ...missing] } }), retry);
      } catch (error) {
        const [metadata] = await table.getMetadata();
        const now = ((metadata as { schema?: { fields?: TableField[] } }).schema?.fields ?? []) as TableField[];
        if (!missing.every((field) => now.some((have) => have.name?.toLowerCase() === field.name!.toLowerCase()))) throw error;
      }
    }
    return;
  } catch (error) {
    if (!isNotFound(apiFailureOf(error))) throw error;
  }
  try {
    await withRetry(
      'ledger table create',
      () =>
        table.create({
          schema: { fields: RUN_LEDGER_FIELDS },
          description: 'One row per tilehouse tile run and target (append-only; the latest row of a run or window wins)',
        }),
      retry,
    );
  } catch (error) {
    // Another run created it first.
    if (!isDuplicate(apiFailureOf(error))) throw error;
  }
}

function ledgerJobId(row: LedgerRow): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([row.runId, row.job, row.target, row.status, row.window?.from ?? '']))
    .digest('hex')
    .slice(0, 32);
  return `tilehouse_ledger_${digest}`;
}

/** The columns a ledger made before they existed may lack, named by the query that needed them. */
function missesOpenColumn(error: unknown): boolean {
  return error instanceof Error && (error.message.includes(WINDOW_OPEN) || error.message.includes(EXPIRED_ROWS));
}

/** A column added after the ledger's first version (window_open, publish_guard) that its SQL cannot see. */
function missesAddedColumn(error: unknown): boolean {
  return missesOpenColumn(error) || (error instanceof Error && (error.message.includes(PUBLISH_GUARD) || error.message.includes(DEFINITION)));
}

/**
 * Appends `row` to `_tilehouse_runs` in its target's dataset (created on first use). A ledger whose
 * window_open column could not be added (the emulator patches the schema without its SQL seeing
 * the column) gets the row without it, under its own job id: doneWindows then judges the window
 * by when the row was recorded, as it does the rows written before the column existed.
 */
export async function appendLedgerRow(client: BigQuery, dataset: LedgerDataset, row: LedgerRow, retry: RetryContext): Promise<void> {
  await ensureLedgerTable(client, dataset, retry);
  try {
    await insertLedgerRow(client, dataset, row, retry, true);
  } catch (error) {
    if (!missesAddedColumn(error)) throw error;
    retry.logger.warn(
      { table: tableName({ ...dataset, tableId: RUN_LEDGER_TABLE }) },
      `the run ledger has no ${WINDOW_OPEN} column its queries can see; this row is judged open or closed by when it was recorded`,
    );
    await insertLedgerRow(client, dataset, row, retry, false);
  }
}

async function insertLedgerRow(client: BigQuery, dataset: LedgerDataset, row: LedgerRow, retry: RetryContext, withOpen: boolean): Promise<void> {
  const table = `\`${tableName({ ...dataset, tableId: RUN_LEDGER_TABLE })}\``;
  const query =
    `INSERT INTO ${table} (run_id, job, tile, target, status, published, row_count, window_from, window_to, schema_hash, job_id, load_job_id, error_code, started_at, duration_ms, recorded_at${withOpen ? `, ${WINDOW_OPEN}, ${EXPIRED_ROWS}, ${PUBLISH_GUARD}, ${DEFINITION}` : ''}) ` +
    "VALUES (@run_id, @job, @tile, @target, @status, @published = 'true', CAST(@rows AS INT64), " +
    "SAFE_CAST(NULLIF(@window_from, '') AS DATE), SAFE_CAST(NULLIF(@window_to, '') AS DATE), NULLIF(@schema_hash, ''), NULLIF(@job_id, ''), NULLIF(@load_job_id, ''), NULLIF(@error_code, ''), " +
    `TIMESTAMP(@started_at), CAST(@duration_ms AS INT64), CURRENT_TIMESTAMP()${withOpen ? ", CASE @window_open WHEN 'true' THEN TRUE WHEN 'false' THEN FALSE END, SAFE_CAST(NULLIF(@expired_rows, '') AS INT64), NULLIF(@publish_guard, ''), NULLIF(@definition, '')" : ''})`;
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
    ...(withOpen
      ? {
          window_open: row.windowOpen === undefined ? '' : String(row.windowOpen),
          expired_rows: row.expiredRows === undefined ? '' : String(row.expiredRows),
          publish_guard: row.publishGuard ?? '',
          definition: row.definition ?? '',
        }
      : {}),
  };
  const jobId = `${ledgerJobId(row)}${withOpen ? '' : '_no_open'}`;
  const location = dataset.location ? { location: dataset.location } : {};
  let job;
  try {
    [job] = await withRetry('ledger insert', () => client.createQueryJob({ query, params, jobId, ...location }), retry);
  } catch (error) {
    // The same row's job exists (a retry after a lost answer, a re-run of the same run id and
    // outcome): its row is in the ledger once already, or will be when it ends. BigQuery says 409;
    // the emulator says 500, so the job itself is asked.
    const existing = client.job(jobId, location);
    const found =
      isDuplicate(apiFailureOf(error)) ||
      (await existing.exists().then(
        ([exists]) => exists,
        () => false,
      ));
    if (!found) throw error;
    job = existing;
  }
  await withRetry('ledger insert result', () => job.getQueryResults({ maxResults: 0 }), retry);
}

/** What the ledger holds of a job's windows in one table: whole and closed, or published while still open. */
export interface LedgerWindows {
  /** First days of the windows whose latest row says succeeded, published and closed. */
  done: Set<string>;
  /** First days of the windows whose latest row says succeeded and published, but open: not held. */
  open: Set<string>;
}

/**
 * The windows of `job` (their first days) whose latest ledger row for table `tableId` (any
 * partition) says the run succeeded and was published, split by whether the window had ended when
 * it was exported; for `backfill --resume` and incremental runs. A row written before the
 * window_open column existed (NULL there) counts as open when it was recorded before its window
 * ended (`endOf(window_to)`, epoch ms on the job's calendar), by BigQuery's clock (recorded_at,
 * the only time the row kept): exported once more rather than skipped; only a source clock behind
 * BigQuery's by more than what was left of the day can take an open day for a closed one here. A
 * missing ledger: none.
 */
export async function doneWindows(
  client: BigQuery,
  dataset: LedgerDataset,
  job: string,
  tableId: string,
  retry: RetryContext,
  endOf: (windowTo: string) => number,
): Promise<LedgerWindows> {
  const ledger = client.dataset(dataset.datasetId, { projectId: dataset.projectId }).table(RUN_LEDGER_TABLE);
  // Asked first because a query on a missing table fails as a bad query (400 invalidQuery), not 404.
  const [exists] = await withRetry('ledger table exists', () => ledger.exists(), retry);
  if (!exists) return { done: new Set(), open: new Set() };
  // A ledger no run of this version has written to yet lacks the column: its rows are all old ones.
  const [metadata] = await withRetry('ledger table metadata', () => ledger.getMetadata(), retry);
  const fields = ((metadata as { schema?: { fields?: TableField[] } }).schema?.fields ?? []) as TableField[];
  const table = `\`${tableName({ ...dataset, tableId: RUN_LEDGER_TABLE })}\``;
  const read = async (openColumn: string) => {
    const query =
      `SELECT CAST(window_from AS STRING) AS window_from, CAST(window_to AS STRING) AS window_to, status, published, ${openColumn} AS window_open, ` +
      `CAST(UNIX_MILLIS(recorded_at) AS STRING) AS recorded_ms FROM ${table} ` +
      "WHERE job = @job AND (target = @table OR STARTS_WITH(target, CONCAT(@table, '$'))) AND window_from IS NOT NULL ORDER BY recorded_at";
    const [rows] = (await withRetry(
      'ledger read',
      () => client.query({ query, params: { job, table: tableName({ ...dataset, tableId }) }, ...(dataset.location ? { location: dataset.location } : {}) }),
      retry,
    )) as unknown as [
      Array<{ window_from: string; window_to: string | null; status: string; published: boolean; window_open: boolean | null; recorded_ms: string }>,
    ];
    return rows;
  };
  const listed = fields.some((field) => field.name?.toLowerCase() === WINDOW_OPEN);
  let rows;
  try {
    rows = await read(listed ? WINDOW_OPEN : 'CAST(NULL AS BOOL)');
  } catch (error) {
    // Listed in the schema but not seen by SQL (the emulator's patched schema): the old rule for every row.
    if (!listed || !missesOpenColumn(error)) throw error;
    rows = await read('CAST(NULL AS BOOL)');
  }
  const latest = new Map<string, 'done' | 'open' | 'not'>();
  for (const row of rows) {
    if (row.status !== 'succeeded' || !row.published) {
      latest.set(row.window_from, 'not');
      continue;
    }
    const open = row.window_open ?? (row.window_to === null || Number(row.recorded_ms) < endOf(row.window_to));
    latest.set(row.window_from, open ? 'open' : 'done');
  }
  const of = (state: 'done' | 'open') => new Set([...latest].filter(([, value]) => value === state).map(([window]) => window));
  return { done: of('done'), open: of('open') };
}

/** One published run of the ledger, for the publish guard's recent-runs rule. */
export interface LedgerRun {
  target: string;
  rows: number;
  windowFrom: string | undefined;
}

/**
 * The latest `limit` runs of `job` that succeeded and were published into table `tableId` (any
 * partition; `exact`: that target only), newest first, leaving out windows that were still open
 * (their day was not over: their rows are not a day's). A missing ledger: none. The ledger is not
 * partitioned, so the query needs no partition filter; its rows are few and small.
 */
export async function recentLedgerRuns(
  client: BigQuery,
  dataset: LedgerDataset,
  job: string,
  tableId: string,
  limit: number,
  retry: RetryContext,
  options: { exact?: boolean } = {},
): Promise<LedgerRun[]> {
  const ledger = client.dataset(dataset.datasetId, { projectId: dataset.projectId }).table(RUN_LEDGER_TABLE);
  const [exists] = await withRetry('ledger table exists', () => ledger.exists(), retry);
  if (!exists) return [];
  const table = `\`${tableName({ ...dataset, tableId: RUN_LEDGER_TABLE })}\``;
  const targetFilter = options.exact === true ? 'target = @table' : "(target = @table OR STARTS_WITH(target, CONCAT(@table, '$')))";
  // SELECT *: a ledger made before window_open has no such column; rows without it count as closed.
  // More rows than asked for are read, since open windows and the same window run twice are left out here.
  const query = `SELECT * FROM ${table} WHERE job = @job AND ${targetFilter} AND status = 'succeeded' ORDER BY recorded_at DESC LIMIT ${Math.max(1, Math.floor(limit)) * 4 + 8}`;
  const [rows] = (await withRetry(
    'ledger recent runs',
    () => client.query({ query, params: { job, table: tableName({ ...dataset, tableId }) }, ...(dataset.location ? { location: dataset.location } : {}) }),
    retry,
  )) as unknown as [Array<{ target: string; published: boolean; row_count: unknown; window_from?: unknown; window_open?: boolean | null }>];
  const runs: LedgerRun[] = [];
  const windows = new Set<string>();
  for (const row of rows) {
    if (row.published !== true || row.window_open === true) continue;
    const windowFrom = windowDay(row.window_from);
    // A window re-run counts once, with its latest rows.
    if (windowFrom !== undefined) {
      if (windows.has(`${row.target}|${windowFrom}`)) continue;
      windows.add(`${row.target}|${windowFrom}`);
    }
    runs.push({ target: row.target, rows: Number(row.row_count), windowFrom });
    if (runs.length >= limit) break;
  }
  return runs;
}

/** A DATE as the client returns it (a BigQueryDate with `value`, or a string). */
function windowDay(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'object' && 'value' in value) return String((value as { value: unknown }).value);
  return String(value);
}

/** The latest run the ledger says was published into a target, for `status`. */
export interface LedgerPublication {
  runId: string;
  rows: number;
  startedAt: string;
  /** The job definition's fingerprint the run recorded, when the row has one that reads as one. */
  definition: JobDefinition | undefined;
}

/**
 * The latest row of `job` whose run was published into table `tableId` (any partition), by
 * when it was recorded; undefined when the ledger is missing or has none. SELECT *: a ledger made
 * before the definition column has none.
 */
export async function latestPublication(
  client: BigQuery,
  dataset: LedgerDataset,
  job: string,
  tableId: string,
  retry: RetryContext,
): Promise<LedgerPublication | undefined> {
  const ledger = client.dataset(dataset.datasetId, { projectId: dataset.projectId }).table(RUN_LEDGER_TABLE);
  const [exists] = await withRetry('ledger table exists', () => ledger.exists(), retry);
  if (!exists) return undefined;
  const table = `\`${tableName({ ...dataset, tableId: RUN_LEDGER_TABLE })}\``;
  const query = `SELECT * FROM ${table} WHERE job = @job AND (target = @table OR STARTS_WITH(target, CONCAT(@table, '$'))) AND published ORDER BY recorded_at DESC LIMIT 1`;
  const [rows] = (await withRetry(
    'ledger latest publication',
    () => client.query({ query, params: { job, table: tableName({ ...dataset, tableId }) }, ...(dataset.location ? { location: dataset.location } : {}) }),
    retry,
  )) as unknown as [Array<{ run_id: string; row_count: unknown; started_at: unknown; definition?: string | null }>];
  const row = rows[0];
  if (row === undefined) return undefined;
  const started = row.started_at as { value?: unknown } | string;
  return {
    runId: row.run_id,
    rows: Number(row.row_count),
    startedAt: new Date(String(typeof started === 'object' && started !== null && 'value' in started ? started.value : started)).toISOString(),
    definition: definitionOfRow(row.definition),
  };
}

/** The definition a ledger row recorded (its JSON, untrusted: another version may have written it). */
function definitionOfRow(text: string | null | undefined): JobDefinition | undefined {
  if (text === undefined || text === null) return undefined;
  try {
    return jobDefinitionSchema.parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}
