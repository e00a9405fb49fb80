import type { LoadIdentity } from './job-id.js';

// BigQuery's label rules: keys and values of at most 63 characters, lowercase letters, digits,
// underscores and dashes (international letters are allowed too; tilehouse keeps to ASCII so a
// label can be typed in a filter); keys start with a letter; values may be empty.
const MAX_LABEL_LENGTH = 63;
const INVALID_LABEL_CHARACTERS = /[^a-z0-9_-]/g;

/** A label value BigQuery accepts: lowercased, other characters as `_`, cut to 63 characters. */
export function labelValue(value: string): string {
  return value.toLowerCase().replace(INVALID_LABEL_CHARACTERS, '_').slice(0, MAX_LABEL_LENGTH);
}

/** A label key BigQuery accepts: a label value that starts with a letter (`k_` is put in front otherwise). */
export function labelKey(key: string): string {
  const value = labelValue(key);
  return /^[a-z]/.test(value) ? value : labelValue(`k_${value}`);
}

/**
 * The labels on every job of a run (load, copy, query), so that INFORMATION_SCHEMA.JOBS and the
 * billing export can find tilehouse's jobs and their cost by job, tile, run and backfill window.
 */
export function jobLabels(identity: LoadIdentity, tileId: string): Record<string, string> {
  return {
    [labelKey('tilehouse_job')]: labelValue(identity.jobName),
    [labelKey('tile')]: labelValue(tileId),
    [labelKey('run_id')]: labelValue(identity.runId),
    ...(identity.window ? { [labelKey('window')]: labelValue(`${identity.window.from}_${identity.window.to}`) } : {}),
  };
}
