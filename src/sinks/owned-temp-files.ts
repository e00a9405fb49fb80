import { lstat, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { FOREIGN_TEMP_MAX_AGE_MS, ownerState, parseOwnerTag, type OwnerState } from '../temp-owner.js';

export interface OwnedTempFileSweep {
  /**
   * The owner tag of a temp file of ours (see `formatOwnerTag`), `null` for one of ours written
   * without a tag (an older version), undefined for anything else: a sweep never touches another
   * program's files.
   */
  ownerTagOf: (name: string) => string | null | undefined;
  /** Look in subdirectories too (CSV targets may be nested); default false. */
  recursive?: boolean;
  now?: number;
}

// Directories a sweep cannot or must not read: a fresh ext4 volume's root-owned lost+found, a
// sibling team's folder. Skipping them is right: tilehouse never wrote there.
const UNREADABLE = new Set(['EACCES', 'EPERM', 'ENOTDIR', 'ENOENT', 'ELOOP']);

/** The state of a temp artefact's owner, from its tag; an untagged or unparsable one is unknown. */
export function ownerStateOfTag(tag: string | null): OwnerState {
  const owner = tag === null ? undefined : parseOwnerTag(tag);
  return owner === undefined ? 'unknown' : ownerState(owner);
}

/**
 * The one rule of every sweep (temp files, temp objects): an artefact goes when its owner is
 * provably gone, or when its owner cannot be known (another host, no tag) and it has not been
 * touched for FOREIGN_TEMP_MAX_AGE_MS. A live owner's artefact, this process's included, stays.
 */
export function isAbandoned(state: OwnerState, lastModifiedMs: number, now: number = Date.now()): boolean {
  if (state === 'self' || state === 'alive') return false;
  return state === 'gone' || now - lastModifiedMs >= FOREIGN_TEMP_MAX_AGE_MS;
}

/** A temp artefact of ours whose owner is not running (gone, or on another host and unknown): what a sweep removes, now or once old enough. */
export interface StrayTemp {
  location: string;
  owner: OwnerState;
  modifiedMs: number;
}

/**
 * How a stray temp artefact goes away, for `status`: the next run's sweep when its owner is gone or
 * it has been untouched for FOREIGN_TEMP_MAX_AGE_MS, else the first sweep after that.
 */
export function howStrayTempGoes(stray: StrayTemp, now: number = Date.now()): string {
  if (isAbandoned(stray.owner, stray.modifiedMs, now))
    return stray.owner === 'gone' ? "its run's process is gone: the next run's sweep removes it" : "untouched for a day: the next run's sweep removes it";
  const from = new Date(stray.modifiedMs + FOREIGN_TEMP_MAX_AGE_MS).toISOString();
  return `its run (on another host, or an older version) cannot be asked whether it is alive: the first run's sweep after ${from} removes it`;
}

/**
 * Our temp files under `directory` whose owner is not this process and not a live one, with their
 * owner's state and last change: what a sweep removes (now, or once old enough). Reads only.
 * Unreadable directories are skipped, symbolic links never followed.
 */
export async function strayTempFiles(directory: string, sweep: OwnedTempFileSweep): Promise<StrayTemp[]> {
  const found: StrayTemp[] = [];
  const visit = async (folder: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      if (UNREADABLE.has((error as NodeJS.ErrnoException).code ?? '')) return;
      throw error;
    }
    for (const entry of entries) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        if (sweep.recursive === true) await visit(path);
        continue;
      }
      if (!entry.isFile()) continue;
      const tag = sweep.ownerTagOf(entry.name);
      if (tag === undefined) continue;
      const owner = ownerStateOfTag(tag);
      if (owner === 'self' || owner === 'alive') continue;
      try {
        found.push({ location: path, owner, modifiedMs: (await lstat(path)).mtimeMs });
      } catch (error) {
        // Gone already (a sweep got there first), or not ours to read.
        if (!UNREADABLE.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
      }
    }
  };
  await visit(directory);
  return found;
}

/**
 * Deletes temp files whose owner process is provably gone (killed by OOM, SIGKILL, a node drain),
 * and returns their paths. A file whose owner is alive — another `tilehouse run` on this machine,
 * or a run of this very process (a `schedule` worker with several jobs) — is never touched,
 * however old. Files from another host, or without an owner tag, go only once untouched for
 * FOREIGN_TEMP_MAX_AGE_MS. Unreadable directories are skipped, symbolic links never followed.
 */
export async function removeOwnedTempFiles(directory: string, sweep: OwnedTempFileSweep): Promise<string[]> {
  const removed: string[] = [];
  const now = sweep.now ?? Date.now();
  for (const stray of await strayTempFiles(directory, sweep)) {
    if (!isAbandoned(stray.owner, stray.modifiedMs, now)) continue;
    try {
      await unlink(stray.location);
      removed.push(stray.location);
    } catch (error) {
      // Gone already (another sweep got there first), or not ours to delete.
      if (!UNREADABLE.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    }
  }
  return removed;
}
