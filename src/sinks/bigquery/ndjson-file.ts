import { randomUUID } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { TilehouseError } from '../../errors.js';
import { fileSystemFailureCode, fileSystemFailureHint, type FileSystemFailureCode } from '../file-system-failure.js';
import { howStrayTempGoes, removeOwnedTempFiles, strayTempFiles } from '../owned-temp-files.js';
import type { Leftover } from '../sink.js';
import { formatOwnerTag, OWNER_TAG_PATTERN } from '../../temp-owner.js';

// Lines are gathered into chunks of about this size before each write: far fewer write calls than
// one per row, while never holding more than one page of encoded rows.
const CHUNK_BYTES = 64 * 1024;

// `tilehouse-<job>-<runId>-<random>+<owner tag>.ndjson`, as NdjsonFile.create names them (files
// of versions before owner tags lack the `+<owner tag>` part and are swept by age).
const LOAD_FILE = new RegExp(`^tilehouse-[A-Za-z0-9_.-]+?(?:\\+${OWNER_TAG_PATTERN})?\\.ndjson$`);

function loadFileOwnerTag(name: string): string | null | undefined {
  const match = LOAD_FILE.exec(name);
  if (!match) return undefined;
  return match[1] ?? null;
}

/** Deletes load files of dead runs in `directory` (see removeOwnedTempFiles). */
export function removeStaleLoadFiles(directory: string): Promise<string[]> {
  return removeOwnedTempFiles(directory, { ownerTagOf: loadFileOwnerTag });
}

/** The load files of runs that are not alive in `directory`, with how each goes (`status`); reads only. */
export async function strayLoadFiles(directory: string): Promise<Leftover[]> {
  const now = Date.now();
  return (await strayTempFiles(directory, { ownerTagOf: loadFileOwnerTag })).map((stray) => ({
    what: `BigQuery load file ${stray.location}`,
    goes: howStrayTempGoes(stray, now),
  }));
}

/**
 * Writing the local load file failed (`disk_full`, `permission_denied`, or
 * `write_failed`): a failure of the BigQuery sink, whose target kind it carries.
 */
export class LoadFileError extends TilehouseError {
  readonly code: FileSystemFailureCode | 'write_failed';
  override readonly targetKind = 'bigquery';

  constructor(jobName: string, path: string, operation: string, cause: unknown) {
    const code = fileSystemFailureCode(cause, 'write_failed');
    const hint = fileSystemFailureHint(code);
    super(`job ${jobName}: load file ${path}: ${operation} failed: ${cause instanceof Error ? cause.message : String(cause)}${hint ? ` (${hint})` : ''}`, {
      cause,
    });
    this.code = code;
  }
}

/**
 * The load file of one run: newline-delimited JSON written as pages arrive, with the stream's
 * backpressure respected, and removed whatever the outcome.
 */
export class NdjsonFile {
  private closed = false;
  /** The file's size once closed: its peak on disk (it only grows), the run's temp bytes (k8s/README.md, "Disk"). */
  private size: number | undefined;

  private constructor(
    private readonly jobName: string,
    readonly path: string,
    private readonly stream: WriteStream,
  ) {
    // A write error (disk full) is raised by the next write or by close, via `stream.errored`;
    // without a listener it would crash the process as an unhandled 'error' event.
    stream.on('error', () => undefined);
  }

  /** Creates a new file (never reuses one) named after the run, readable by this user only. */
  static async create(directory: string, jobName: string, runId: string): Promise<NdjsonFile> {
    const name = ['tilehouse', jobName, runId, randomUUID().slice(0, 8)].join('-').replace(/[^A-Za-z0-9_.-]/g, '_');
    const path = join(directory, `${name}+${formatOwnerTag()}.ndjson`);
    try {
      await mkdir(directory, { recursive: true });
      const stream = createWriteStream(path, { flags: 'wx', mode: 0o600 });
      await once(stream, 'ready');
      return new NdjsonFile(jobName, path, stream);
    } catch (error) {
      throw new LoadFileError(jobName, path, 'creating it', error);
    }
  }

  /** Appends newline-terminated lines; resolves once the stream can take more. */
  async writeLines(lines: Iterable<string>): Promise<void> {
    let chunk = '';
    for (const line of lines) {
      chunk += line;
      if (chunk.length >= CHUNK_BYTES) {
        await this.write(chunk);
        chunk = '';
      }
    }
    if (chunk.length > 0) await this.write(chunk);
  }

  /** Flushes and closes the file; after this it is complete and can be uploaded. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stream.end();
    try {
      await finished(this.stream);
    } catch (error) {
      throw new LoadFileError(this.jobName, this.path, 'writing it', error);
    }
    // Only a figure for the summary: a file that cannot be read is the load's to report.
    this.size = await stat(this.path).then(
      (found) => found.size,
      () => undefined,
    );
  }

  /** Bytes on disk once closed; undefined before. */
  get bytes(): number | undefined {
    return this.size;
  }

  /** Closes the descriptor if still open and deletes the file. Safe to call more than once. */
  async remove(): Promise<void> {
    this.closed = true;
    if (!this.stream.closed) {
      const closing = once(this.stream, 'close').catch(() => undefined);
      this.stream.destroy();
      await closing;
    }
    await rm(this.path, { force: true });
  }

  private async write(chunk: string): Promise<void> {
    try {
      if (this.stream.errored) throw this.stream.errored;
      // `once` also rejects if the stream fails while we wait for 'drain'.
      if (!this.stream.write(chunk)) await once(this.stream, 'drain');
    } catch (error) {
      throw new LoadFileError(this.jobName, this.path, 'writing it', error);
    }
  }
}
