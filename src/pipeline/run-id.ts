import { randomBytes } from 'node:crypto';

/**
 * A run id sorts by time and is unique even when Kubernetes starts the same CronJob twice in the
 * same second: `20261121T213005Z-9f2c1a`.
 */
export function newRunId(now: Date = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

/**
 * A backfill window's run id: the backfill's, with the window's first day. Derived, not drawn, so
 * a backfill re-run with the same --run-id gives each window the id it had (BigQuery finds its
 * earlier jobs by it), and a ledger row names both the backfill and the window.
 */
export function windowRunId(runId: string, window: { from: string }): string {
  return `${runId}-${window.from.replaceAll('-', '')}`;
}

/** Run ids name temp files, staging tables and job ids: they keep to what all of those accept. */
export const RUN_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** A backfill's id leaves room for the `-YYYYMMDD` of its windows' ids. */
export const BACKFILL_RUN_ID_PATTERN = /^[A-Za-z0-9._-]{1,55}$/;
