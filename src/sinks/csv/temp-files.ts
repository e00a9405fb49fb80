import { basename, dirname, join } from 'node:path';
import { removeStaleFiles } from '../stale-files.js';
import { toFileNameSafe } from './csv-path.js';

// `.<target basename>.tilehouse-<runId>.tmp`: hidden, beside the target, and with a marker so the
// startup sweep can never mistake another program's `.tmp` file for one of ours.
const TEMP_FILE = /^\..+\.tilehouse-[A-Za-z0-9._-]+\.tmp$/;

/**
 * Where a run writes before publishing: the target's own directory, because rename(2) is atomic
 * only within one file system — a temp file anywhere else would need a copy, which is neither
 * atomic nor free.
 */
export function tempPathFor(target: string, runId: string): string {
  return join(dirname(target), `.${basename(target)}.tilehouse-${toFileNameSafe(runId)}.tmp`);
}

export function isTempFileName(name: string): boolean {
  return TEMP_FILE.test(name);
}

export interface StaleTempFileOptions {
  /** Only files last modified before this are removed: the start of the current run. */
  olderThan: Date;
}

/** Deletes CSV temp files of killed runs anywhere under `directory` (see removeStaleFiles). */
export function removeStaleTempFiles(directory: string, options: StaleTempFileOptions): Promise<string[]> {
  return removeStaleFiles(directory, { olderThan: options.olderThan, matches: isTempFileName, recursive: true });
}
