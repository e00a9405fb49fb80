import { basename, dirname, join } from 'node:path';
import { removeOwnedTempFiles } from '../owned-temp-files.js';
import { formatOwnerTag, OWNER_TAG_PATTERN } from '../temp-owner.js';
import { toFileNameSafe } from './path-template.js';

// `.<target basename>.tilehouse-<runId>+<owner tag>.tmp`: hidden, beside the target, with a marker
// so a sweep never mistakes another program's `.tmp` file for ours, and with its writer's owner
// tag so a sweep removes it only once that process is gone. (Before owner tags the name ended
// `.tilehouse-<runId>.tmp`; such files are still recognised, and swept by age.)
const TEMP_FILE = new RegExp(`^\\..+\\.tilehouse-[A-Za-z0-9._-]+?(?:\\+${OWNER_TAG_PATTERN})?\\.tmp$`);

// File names are limited to 255 bytes. The marker, run id and owner tag (up to ~100 bytes on a
// pod whose name is a 63-character host name) must fit whole; the target's name gets the rest.
const MAX_NAME_BYTES = 255;
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
  const suffix = `.tilehouse-${toFileNameSafe(runId).slice(0, MAX_RUN_ID)}+${formatOwnerTag()}.tmp`;
  return `.${truncateToBytes(targetName, MAX_NAME_BYTES - 1 - Buffer.byteLength(suffix))}${suffix}`;
}

/** The longest prefix of `text` that fits in `bytes` UTF-8 bytes, never splitting a character. */
function truncateToBytes(text: string, bytes: number): string {
  let used = 0;
  let end = 0;
  for (const character of text) {
    used += Buffer.byteLength(character);
    if (used > bytes) break;
    end += character.length;
  }
  return text.slice(0, end);
}

export function isTempFileName(name: string): boolean {
  return TEMP_FILE.test(name);
}

/** The owner tag of one of our temp files; null for an untagged one; undefined if not ours. */
export function tempFileOwnerTag(name: string): string | null | undefined {
  const match = TEMP_FILE.exec(name);
  if (!match) return undefined;
  return match[1] ?? null;
}

/** Deletes file sinks' temp files of dead runs under `directory` (see removeOwnedTempFiles). */
export function removeStaleTempFiles(directory: string, options: { recursive: boolean }): Promise<string[]> {
  return removeOwnedTempFiles(directory, { ownerTagOf: tempFileOwnerTag, recursive: options.recursive });
}
