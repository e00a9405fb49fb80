import { lstat, readdir, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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

/**
 * Deletes temp files left behind by runs that were killed before they could commit or abort
 * (OOM, SIGKILL, node restart), anywhere under `directory`; a missing directory is simply nothing
 * to clean. Returns the removed paths.
 *
 * A file still being written by a live run is modified with every page, so `olderThan` (the
 * current run's start) normally spares it. A live run in another process that has not written
 * since before that moment (e.g. stuck in retries) would lose its temp file; its commit then
 * fails and its target stays intact. When processes overlap on purpose, pass an earlier cutoff.
 */
export async function removeStaleTempFiles(directory: string, options: StaleTempFileOptions): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(directory, { recursive: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  const cutoff = options.olderThan.getTime();
  for (const entry of entries) {
    if (!isTempFileName(basename(entry))) continue;
    const path = join(directory, entry);
    try {
      const stats = await lstat(path);
      if (!stats.isFile() || stats.mtimeMs >= cutoff) continue;
      await unlink(path);
      removed.push(path);
    } catch (error) {
      // Another process cleaning up at the same time got there first.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  return removed;
}
