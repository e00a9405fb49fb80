import { basename, dirname, join } from 'node:path';
import { tempNameFor as sharedTempNameFor, tempNameOwnerTag } from '../../write-file-atomically.js';
import { howStrayTempGoes, removeOwnedTempFiles, strayTempFiles } from '../owned-temp-files.js';
import type { Leftover } from '../sink.js';

// A file sink's temp files follow the house's one temp-name scheme (src/write-file-atomically.ts),
// labelled with the run id: `.<target basename>.tilehouse-<runId>+<owner tag>.tmp`.
const MAX_RUN_ID = 64;

/**
 * Where a run writes before publishing: the target's own directory, because rename(2) is atomic
 * only within one file system — a temp file anywhere else would need a copy, which is neither
 * atomic nor free.
 */
export function tempPathFor(target: string, runId: string): string {
  return join(dirname(target), tempNameFor(basename(target), runId));
}

/**
 * The temp name of a target's base name: `.<name>.tilehouse-<runId>+<owner tag>.tmp`. Also the
 * last segment of a Cloud Storage temp object's name, so one pattern (and one sweep rule)
 * recognises both.
 */
export function tempNameFor(targetName: string, runId: string): string {
  return sharedTempNameFor(targetName, toFileNameSafe(runId).slice(0, MAX_RUN_ID));
}

export function isTempFileName(name: string): boolean {
  return tempNameOwnerTag(name) !== undefined;
}

/** The owner tag of one of our temp files; null for an untagged one; undefined if not ours. */
export function tempFileOwnerTag(name: string): string | null | undefined {
  return tempNameOwnerTag(name);
}

/** Deletes file sinks' temp files of dead runs under `directory` (see removeOwnedTempFiles). */
export function removeStaleTempFiles(directory: string, options: { recursive: boolean }): Promise<string[]> {
  return removeOwnedTempFiles(directory, { ownerTagOf: tempFileOwnerTag, recursive: options.recursive });
}

/** File sinks' temp files under `directory` that a sweep removes (now, or once old enough), with how each goes; reads only. */
export async function strayTempFilesIn(directory: string, options: { recursive: boolean }): Promise<Leftover[]> {
  const now = Date.now();
  return (await strayTempFiles(directory, { ownerTagOf: tempFileOwnerTag, recursive: options.recursive })).map((stray) => ({
    what: `temp file ${stray.location}`,
    goes: howStrayTempGoes(stray, now),
  }));
}

/**
 * Text usable as (part of) a file name on any common file system: ASCII letters, digits, `.`,
 * `_` and `-`; anything else becomes `_`. A leading dot would hide the file (and `.`/`..` would
 * be path segments), so it becomes `_` as well.
 */
export function toFileNameSafe(value: string): string {
  const safe = value
    .replace(/[^A-Za-z0-9._-]/g, '_')
    .replace(/^\./, '_')
    .slice(0, 200);
  return safe.length === 0 ? '_' : safe;
}
