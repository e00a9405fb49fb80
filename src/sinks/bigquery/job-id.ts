import { createHash } from 'node:crypto';

/** What makes one run's write to one table unique: the same values always give the same ids. */
export interface LoadIdentity {
  jobName: string;
  datasetId: string;
  /** Without partition decorator. */
  tableId: string;
  runId: string;
  window?: { from: string; to: string };
}

/**
 * `load`: the NDJSON file into the staging table (prepare); `publish`: the copy (or truncating
 * query) onto the target; `publish_<partition id>`: the copy of one partition (`partitionBy`).
 */
export type JobStage = 'load' | 'publish' | `publish_${string}`;

// BigQuery job ids: letters, digits, underscores and dashes, at most 1024 characters. Table names:
// at most 1024 UTF-8 bytes; tilehouse keeps them to ASCII letters, digits and underscores.
const MAX_ID_LENGTH = 1024;
const INVALID_JOB_ID_CHARACTERS = /[^A-Za-z0-9_-]/g;
const INVALID_TABLE_CHARACTERS = /[^A-Za-z0-9_]/g;

/** The prefix that marks tilehouse's staging tables; nothing else in a dataset should use it. */
export const STAGING_TABLE_PREFIX = '_tilehouse_staging_';

/**
 * The id of one job of a run, derived only from what identifies the run and the stage, so that a
 * request retried after a lost answer (or a re-run with the same run id) reuses the id and
 * BigQuery refuses it as a duplicate instead of running it twice. For the `publish` copy this is
 * what makes `append` idempotent per run id. Dataset and table are part of it because one job may
 * have several BigQuery sinks. Attempt 1 is the base id; later attempts (after a failed job took
 * the id) get `_attempt<n>`.
 */
export function jobId(identity: LoadIdentity, stage: JobStage, attempt = 1): string {
  const window = identity.window ? [identity.window.from, identity.window.to] : [];
  const base = ['tilehouse', identity.jobName, identity.datasetId, identity.tableId, ...window, identity.runId, stage]
    .join('_')
    .replace(INVALID_JOB_ID_CHARACTERS, '_');
  return fitWithin(base, attempt > 1 ? `_attempt${attempt}` : '');
}

/**
 * The staging table of one run, in the target's dataset: `_tilehouse_staging_<job>_<table>
 * [_<from>_<to>]_<runId>`. Deterministic, so a retried prepare of the same run reuses (truncates)
 * it instead of leaving a second one behind; the job name keeps two tiles of one run that write
 * the same table apart.
 */
export function stagingTableId(identity: LoadIdentity): string {
  const window = identity.window ? [identity.window.from, identity.window.to] : [];
  const name = [identity.jobName, identity.tableId, ...window, identity.runId].join('_').replace(INVALID_TABLE_CHARACTERS, '_');
  return fitWithin(STAGING_TABLE_PREFIX + name, '');
}

// Too long (huge run ids): keep a readable prefix and a digest of the whole, still deterministic.
function fitWithin(base: string, suffix: string): string {
  if (base.length + suffix.length <= MAX_ID_LENGTH) return base + suffix;
  const digest = createHash('sha256').update(base).digest('hex').slice(0, 32);
  return `${base.slice(0, MAX_ID_LENGTH - suffix.length - digest.length - 1)}_${digest}${suffix}`;
}
