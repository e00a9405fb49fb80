import { createHash } from 'node:crypto';

/** What makes one load unique: the same values always give the same job id. */
export interface LoadIdentity {
  jobName: string;
  datasetId: string;
  /** Without partition decorator. */
  tableId: string;
  runId: string;
  window?: { from: string; to: string };
}

// BigQuery job ids: letters, digits, underscores and dashes, at most 1024 characters.
const MAX_JOB_ID_LENGTH = 1024;
const INVALID_CHARACTERS = /[^A-Za-z0-9_-]/g;

/**
 * The id of a load job, derived only from what identifies the load, so that a request retried
 * after a lost answer reuses the id and BigQuery refuses it as a duplicate instead of loading the
 * file twice. Dataset and table are part of it because one job may have several BigQuery sinks.
 * Attempt 1 is the base id; later attempts (after a failed job took the id) get `_attempt<n>`.
 */
export function loadJobId(identity: LoadIdentity, attempt = 1): string {
  const window = identity.window ? [identity.window.from, identity.window.to] : [];
  const base = ['tilehouse', identity.jobName, identity.datasetId, identity.tableId, ...window, identity.runId]
    .join('_')
    .replace(INVALID_CHARACTERS, '_');
  const suffix = attempt > 1 ? `_attempt${attempt}` : '';
  if (base.length + suffix.length <= MAX_JOB_ID_LENGTH) return base + suffix;
  // Too long (huge run ids): keep a readable prefix and a digest of the whole, still deterministic.
  const digest = createHash('sha256').update(base).digest('hex').slice(0, 32);
  return `${base.slice(0, MAX_JOB_ID_LENGTH - suffix.length - digest.length - 1)}_${digest}${suffix}`;
}
