import type pg from 'pg';
import { jobDefinitionSchema, type JobDefinition } from '../../value-types/job-definition.js';
import type { SinkWindow } from '../sink.js';
import { LEDGER_TABLE, qualifiedName } from './sql-names.js';

/**
 * The run ledger `_tilehouse_runs`, one per schema: a row per publish, written in the publishing
 * transaction itself, so a row there is proof the run's rows are in the table, and its absence
 * proof they are not. A re-run with the same run id finds it and publishes nothing; a COMMIT
 * whose answer was lost is judged by it; `backfill --resume` and incremental runs read the
 * windows it holds.
 */

export interface LedgerEntry {
  target: string;
  runId: string;
  window: SinkWindow | undefined;
  job: string;
  tile: string;
  writeMode: string;
  rows: number;
  /** When the run started (`status` judges a target late against the schedule with it). */
  startedAt?: Date | undefined;
  /** The fingerprint of the job's definition the run ran with, for `status`'s "changed since". */
  definition?: JobDefinition | undefined;
}

/**
 * Columns added to the ledger after it first shipped, each nullable (a row an older version wrote
 * has none): added to a ledger that lacks them at the next publish, under the ledger lock.
 */
const LATER_COLUMNS = [
  { name: 'run_started_at', type: 'timestamp with time zone' },
  { name: 'definition', type: 'jsonb' },
] as const;

function ledger(schema: string): string {
  return qualifiedName(schema, LEDGER_TABLE);
}

async function ledgerExists(client: pg.Client, schema: string): Promise<boolean> {
  const found = await client.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [ledger(schema)]);
  return found.rows[0]?.found != null;
}

/** Creates the ledger when it is not there; inside a publish, under the schema's ledger lock (two first runs at once). */
export async function ensureLedger(client: pg.Client, schema: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tilehouse ledger ${schema}`]);
  if (await ledgerExists(client, schema)) {
    // Asked first: ALTER TABLE takes the ledger's exclusive lock even when it adds nothing.
    const present = await client.query<{ name: string }>(
      'SELECT attname AS name FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped',
      [ledger(schema)],
    );
    const missing = LATER_COLUMNS.filter((column) => !present.rows.some((row) => row.name === column.name));
    if (missing.length > 0)
      await client.query(`ALTER TABLE ${ledger(schema)} ${missing.map((column) => `ADD COLUMN IF NOT EXISTS ${column.name} ${column.type}`).join(', ')}`);
    return;
  }
  await client.query(
    `CREATE TABLE ${ledger(schema)} (
       target_table text NOT NULL,
       run_id text NOT NULL,
       window_from text NOT NULL DEFAULT '',
       window_to text,
       window_open boolean NOT NULL DEFAULT false,
       job text NOT NULL,
       tile text NOT NULL,
       write_mode text NOT NULL,
       rows bigint NOT NULL,
       published_at timestamp with time zone NOT NULL DEFAULT now(),
       run_started_at timestamp with time zone,
       definition jsonb,
       PRIMARY KEY (target_table, run_id, window_from))`,
  );
}

/** The rows a publish of this run (and window) wrote into the target, or undefined when none is recorded. */
export async function publishedRows(client: pg.Client, schema: string, entry: Pick<LedgerEntry, 'target' | 'runId' | 'window'>): Promise<number | undefined> {
  if (!(await ledgerExists(client, schema))) return undefined;
  const found = await client.query<{ rows: string }>(
    `SELECT rows::text AS rows FROM ${ledger(schema)} WHERE target_table = $1 AND run_id = $2 AND window_from = $3`,
    [entry.target, entry.runId, entry.window?.from ?? ''],
  );
  const rows = found.rows[0]?.rows;
  return rows === undefined ? undefined : Number(rows);
}

export async function recordPublish(client: pg.Client, schema: string, entry: LedgerEntry): Promise<void> {
  await client.query(
    // published_at: the clock at this insert, the publish's last statement but the staging table's
    // DROP, not now() (the transaction's start): two publishes into one schema are ordered by it as
    // they committed, the second to commit later, whichever began first.
    `INSERT INTO ${ledger(schema)} (target_table, run_id, window_from, window_to, window_open, job, tile, write_mode, rows, run_started_at, definition, published_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, clock_timestamp())`,
    [
      entry.target,
      entry.runId,
      entry.window?.from ?? '',
      entry.window?.to ?? null,
      entry.window?.open === true,
      entry.job,
      entry.tile,
      entry.writeMode,
      entry.rows,
      entry.startedAt ?? null,
      entry.definition === undefined ? null : JSON.stringify(entry.definition),
    ],
  );
}

/** The rows of the latest closed publishes of a job into a target, newest first (the publish guard's recent runs). */
export async function recentRuns(client: pg.Client, schema: string, target: string, job: string, count: number): Promise<number[]> {
  if (count <= 0) return [];
  if (!(await ledgerExists(client, schema))) return [];
  const found = await client.query<{ rows: string }>(
    `SELECT rows::text AS rows FROM ${ledger(schema)} WHERE target_table = $1 AND job = $2 AND NOT window_open ORDER BY published_at DESC LIMIT $3`,
    [target, job, count],
  );
  return found.rows.map((row) => Number(row.rows));
}

/** The windows the ledger holds for a target, each with whether it was open when published (window-state.ts). */
export async function ledgerWindows(client: pg.Client, schema: string, target: string): Promise<Array<{ from: string; to: string; open: boolean }>> {
  if (!(await ledgerExists(client, schema))) return [];
  const found = await client.query<{ window_from: string; window_to: string; window_open: boolean }>(
    `SELECT window_from, window_to, window_open FROM ${ledger(schema)} WHERE target_table = $1 AND window_from <> '' ORDER BY published_at`,
    [target],
  );
  return found.rows.map((row) => ({ from: row.window_from, to: row.window_to, open: row.window_open }));
}

/** The latest publish into a target (any window), as `status` tells it; undefined when the ledger names none. */
export async function latestPublish(
  client: pg.Client,
  schema: string,
  target: string,
): Promise<{ runId: string; at: string; rows: number; writeMode: string; definition?: JobDefinition } | undefined> {
  if (!(await ledgerExists(client, schema))) return undefined;
  // A ledger an older version created lacks the later columns until its next publish: read them only when there.
  const later = await client.query<{ name: string }>(
    'SELECT attname AS name FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped',
    [ledger(schema)],
  );
  const has = (name: string) => later.rows.some((row) => row.name === name);
  const found = await client.query<{ run_id: string; at: Date; rows: string; write_mode: string; definition: unknown }>(
    `SELECT run_id, ${has('run_started_at') ? 'coalesce(run_started_at, published_at)' : 'published_at'} AS at, rows::text AS rows, write_mode,
            ${has('definition') ? 'definition' : 'NULL::jsonb'} AS definition
       FROM ${ledger(schema)} WHERE target_table = $1 ORDER BY published_at DESC LIMIT 1`,
    [target],
  );
  const row = found.rows[0];
  if (row === undefined) return undefined;
  const definition = jobDefinitionSchema.safeParse(row.definition);
  return {
    runId: row.run_id,
    at: row.at.toISOString(),
    rows: Number(row.rows),
    writeMode: row.write_mode,
    ...(definition.success ? { definition: definition.data } : {}),
  };
}
