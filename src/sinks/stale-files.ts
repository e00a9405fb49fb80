import { lstat, readdir, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';

export interface StaleFileSweep {
  /** Only files last modified before this are removed: the start of the current run. */
  olderThan: Date;
  /** Our own temp-file names only: a sweep must never touch another program's files. */
  matches: (name: string) => boolean;
  /** Look in subdirectories too (CSV targets may be nested); default false. */
  recursive?: boolean;
}

/**
 * Deletes temp files left behind by runs that were killed before they could commit or abort
 * (OOM, SIGKILL, node restart); a missing directory is simply nothing to clean. Returns the
 * removed paths.
 *
 * A file still being written by a live run is modified with every page, so `olderThan` (the
 * current run's start) normally spares it. A live run in another process that has not written
 * since before that moment (e.g. stuck in retries) would lose its temp file; its commit then
 * fails and its target stays intact.
 */
export async function removeStaleFiles(directory: string, sweep: StaleFileSweep): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(directory, { recursive: sweep.recursive ?? false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  const cutoff = sweep.olderThan.getTime();
  for (const entry of entries) {
    if (!sweep.matches(basename(entry))) continue;
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
