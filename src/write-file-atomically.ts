import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { formatOwnerTag, OWNER_TAG_PATTERN } from './temp-owner.js';
import { redactText } from './redaction.js';

/**
 * The one way tilehouse replaces a file so that a reader never sees half of it: the bytes go to a
 * temp file beside the target (rename(2) is atomic only within one file system), are fsynced,
 * then renamed onto the target, and the directory is fsynced so the rename survives a crash.
 * Any failure removes the temp file, and the target keeps what it held.
 *
 * Every temp file is named `.<target name>.tilehouse-<label>+<owner tag>.tmp`: hidden, with a
 * marker so a sweep never mistakes another program's `.tmp` for ours, and with its writer's
 * owner tag (`temp-owner.ts`) so the file sinks' sweep removes one left by a killed process, and
 * only once that process is gone. The file sinks name their data and manifest temp files the
 * same way (label = run id); a small file (a summary, a recording, a manifest of `k8s`) gets a
 * random label, so two writers in one process never share a temp file.
 */

// `.<name>.tilehouse-<label>+<owner tag>.tmp`; before owner tags the name ended
// `.tilehouse-<label>.tmp`, still recognised (and swept by age).
const TEMP_NAME = new RegExp(`^\\..+\\.tilehouse-[A-Za-z0-9._-]+?(?:\\+${OWNER_TAG_PATTERN})?\\.tmp$`);

// File names are limited to 255 bytes. The marker, label and owner tag (up to ~100 bytes on a
// pod whose name is a 63-character host name) must fit whole; the target's name gets the rest.
const MAX_NAME_BYTES = 255;

/**
 * The temp name of a target's base name: `.<name>.tilehouse-<label>+<owner tag>.tmp`. `label`
 * must hold only `[A-Za-z0-9._-]`. Also the last segment of a Cloud Storage temp object's name,
 * so one pattern (and one sweep rule) recognises both.
 */
export function tempNameFor(targetName: string, label: string): string {
  const suffix = `.tilehouse-${label}+${formatOwnerTag()}.tmp`;
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

/** The owner tag of one of our temp files; null for an untagged one; undefined if not ours. */
export function tempNameOwnerTag(name: string): string | null | undefined {
  const match = TEMP_NAME.exec(name);
  if (!match) return undefined;
  return match[1] ?? null;
}

/** A fresh temp path beside `target`, unique within this process. */
export function smallFileTempPath(target: string): string {
  return join(dirname(target), tempNameFor(basename(target), `write-${randomBytes(4).toString('hex')}`));
}

export interface PrepareOptions {
  /** Where to write; default a fresh `smallFileTempPath(target)`. It must not exist. */
  tempPath?: string;
  /** The new file's mode before the umask; default 0o666, as `fs.writeFile`. */
  mode?: number;
}

// Some file systems (and Windows) cannot fsync a directory; there the rename is as durable as
// the platform allows.
const NO_DIRECTORY_SYNC = new Set(['EINVAL', 'ENOTSUP', 'EPERM', 'EISDIR', 'EBADF']);

/** Makes a rename in `directory` durable: fsyncs the directory entry. */
export async function syncDirectory(directory: string): Promise<void> {
  let handle;
  try {
    handle = await open(directory, 'r');
    await handle.sync();
  } catch (error) {
    if (NO_DIRECTORY_SYNC.has((error as NodeJS.ErrnoException).code ?? '')) return;
    throw error;
  } finally {
    await handle?.close();
  }
}

/** A file's new content, fsynced in its temp file; the target untouched until `publish`. */
export class PreparedFile {
  private constructor(
    readonly target: string,
    readonly tempPath: string,
  ) {}

  /**
   * Phase 1: `data` in a temp file beside `target`, fsynced and closed. On any failure the temp
   * file is removed and the error rethrown as it came.
   */
  static async prepare(target: string, data: string | Uint8Array, options: PrepareOptions = {}): Promise<PreparedFile> {
    const tempPath = options.tempPath ?? smallFileTempPath(target);
    let handle;
    let created = false;
    try {
      // `wx`: a temp name that exists belongs to another writer; never write into its file.
      handle = await open(tempPath, 'wx', options.mode ?? 0o666);
      created = true;
      // Text is words (a summary, a record, a manifest, a job file, k8s manifests): it passes the one
      // redaction step (issue 61). Bytes are the caller's own and pass as they are.
      await handle.writeFile(typeof data === 'string' ? redactText(data) : data);
      await handle.sync();
      await handle.close();
      handle = undefined;
    } catch (error) {
      await handle?.close().catch(() => undefined);
      if (created) await rm(tempPath, { force: true }).catch(() => undefined);
      throw error;
    }
    return new PreparedFile(target, tempPath);
  }

  /**
   * Phase 2: the rename onto the target, then (unless the caller syncs the same directory right
   * after, as a file sink does after its data file) the directory fsync. A failed rename leaves
   * the temp file for `discard`, so a two-phase caller decides when it goes.
   */
  async publish(options: { syncDirectory?: boolean } = {}): Promise<void> {
    await rename(this.tempPath, this.target);
    if (options.syncDirectory !== false) await syncDirectory(dirname(this.target));
  }

  /** Removes the temp file (after a failed or abandoned publish); a missing one is fine. */
  discard(): Promise<void> {
    return rm(this.tempPath, { force: true });
  }
}

/**
 * Replaces `target` with `data` whole (prepare, then publish). On any failure the temp file is
 * removed and the target holds what it held; the error is rethrown as it came.
 */
export async function writeFileAtomically(target: string, data: string | Uint8Array, options: PrepareOptions = {}): Promise<void> {
  const prepared = await PreparedFile.prepare(target, data, options);
  try {
    await prepared.publish();
  } catch (error) {
    // A failed directory fsync comes after the rename: the temp name is gone, the rm a no-op.
    await prepared.discard().catch(() => undefined);
    throw error;
  }
}
