import type pg from 'pg';
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
}

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
  if (await ledgerExists(client, schema)) return;
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
    `INSERT INTO ${ledger(schema)} (target_table, run_id, window_from, window_to, window_open, job, tile, write_mode, rows, published_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, clock_timestamp())`,
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
