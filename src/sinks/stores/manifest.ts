import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { basename } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { Column } from '../../transform/column.js';
import { jobDefinitionSchema, type JobDefinition } from '../../value-types/job-definition.js';
import { redactedJson } from '../../redaction.js';
import { PreparedFile } from '../../write-file-atomically.js';
import { FileWriteError } from './store-errors.js';
import type { FormatNames } from './file-bytes.js';

/**
 * `<file>.manifest.json`: what a consumer needs to tell that a file holds one whole run, and
 * which. Written in prepare (phase 1) to a temp file beside the target, fsynced; published in the
 * same step as the data file, right AFTER its rename, so the manifest is the completion marker:
 *
 * - a manifest never describes a data file that is not there yet: when `<file>.manifest.json`
 *   (re)appears, the file it names is already the run it describes;
 * - between the two renames (microseconds, or for good if the process dies between them) the new
 *   data file sits beside the previous run's manifest, and its sha256 does not match. A consumer
 *   that checks the sha256 (and the rows, if it counts them) never takes a file for a run it is
 *   not; one that finds a mismatch waits for the next manifest or the next run.
 *
 * The other order (manifest first) would let a manifest announce a file that is not there yet,
 * which is worse for the usual consumer that polls for the manifest.
 */

export const MANIFEST_SUFFIX = '.manifest.json';
export const MANIFEST_VERSION = 1;

export interface FileManifest {
  manifestVersion: typeof MANIFEST_VERSION;
  /** The data file's base name (the manifest lies beside it). */
  file: string;
  job: string;
  runId: string;
  /** Data rows (a CSV header row not counted). */
  rows: number;
  /** The file's size and SHA-256 as stored (of the gzip bytes for a .gz file). */
  bytes: number;
  sha256: string;
  gzip: boolean;
  columns: Array<Pick<Column, 'name' | 'header' | 'type'>>;
  /**
   * A window's [from, to). `open`: the day had not ended on the source's clock when the export
   * started, so rows may still arrive: an incremental run exports it again. (A manifest from before
   * this field has none; see wasOpen in window-state.ts.)
   */
  window?: { from: string; to: string; open: boolean };
  /** When the data file was made durable (prepare), ISO 8601. */
  preparedAt: string;
  /** When the run that wrote it started, ISO 8601 (absent in manifests from before this field). */
  runStartedAt?: string;
  /** The fingerprint of the job's definition the run ran with (absent in manifests from before this field). */
  definition?: JobDefinition;
}

/** What a run adds to its manifests besides the file's own facts. */
export interface ManifestRun {
  window?: { from: string; to: string; open?: boolean };
  runStartedAt?: string;
  definition?: JobDefinition;
}

export interface ManifestInputs {
  /** Names the format in errors; not part of the manifest. */
  format: FormatNames;
  jobName: string;
  target: string;
  /** The fsynced data temp file whose bytes the manifest describes. */
  dataPath: string;
  /** Where the manifest is written before it is published (one of our owner-tagged temp names). */
  tempPath: string;
  runId: string;
  rows: number;
  bytes: number;
  gzip: boolean;
  columns: readonly Column[];
  window?: { from: string; to: string; open?: boolean };
  runStartedAt?: string;
  definition?: JobDefinition;
}

/**
 * A manifest as read back from a target (untrusted JSON: another version, a hand edit): the
 * fields that say which run wrote the file, each dropped when it is not what this version writes.
 */
export const storedManifestSchema = z
  .object({
    runId: z.string().optional().catch(undefined),
    rows: z.number().optional().catch(undefined),
    bytes: z.number().optional().catch(undefined),
    preparedAt: z.string().optional().catch(undefined),
    runStartedAt: z.string().optional().catch(undefined),
    definition: jobDefinitionSchema.optional().catch(undefined),
  })
  .loose();
export type StoredManifest = z.infer<typeof storedManifestSchema>;

/** The run a stored manifest names, with its job definition when recorded, for the publish guard. */
export function writtenByOf(manifest: StoredManifest): { writtenBy?: { runId: string; definition?: JobDefinition } } {
  if (manifest.runId === undefined) return {};
  return { writtenBy: { runId: manifest.runId, ...(manifest.definition === undefined ? {} : { definition: manifest.definition }) } };
}

export function manifestPathOf(target: string): string {
  return `${target}${MANIFEST_SUFFIX}`;
}

/** SHA-256 of a file, read back from disk (after its fsync: the bytes a reader will get). */
export async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/** The manifest of a prepared run (local file or Cloud Storage object alike). */
export function buildManifest(inputs: Omit<ManifestInputs, 'dataPath' | 'tempPath' | 'format'>, sha256: string): FileManifest {
  return {
    manifestVersion: MANIFEST_VERSION,
    file: basename(inputs.target),
    job: inputs.jobName,
    runId: inputs.runId,
    rows: inputs.rows,
    bytes: inputs.bytes,
    sha256,
    gzip: inputs.gzip,
    columns: inputs.columns.map(({ name, header, type }) => ({ name, header, type })),
    ...(inputs.window === undefined ? {} : { window: { from: inputs.window.from, to: inputs.window.to, open: inputs.window.open === true } }),
    preparedAt: new Date().toISOString(),
    ...(inputs.runStartedAt === undefined ? {} : { runStartedAt: inputs.runStartedAt }),
    ...(inputs.definition === undefined ? {} : { definition: inputs.definition }),
  };
}

/** The manifest as stored, redacted (src/redaction.ts): its columns' headers are the API's words. */
export function manifestText(manifest: FileManifest): string {
  return `${redactedJson(manifest, 2)}\n`;
}

/** A manifest written to its temp file, ready to be published after the data file. */
export class PreparedManifest {
  private constructor(
    private readonly inputs: ManifestInputs,
    readonly manifest: FileManifest,
    private readonly file: PreparedFile,
  ) {}

  static async prepare(inputs: ManifestInputs): Promise<PreparedManifest> {
    const manifest = buildManifest(inputs, '');
    let file;
    try {
      manifest.sha256 = await sha256Of(inputs.dataPath);
      file = await PreparedFile.prepare(manifestPathOf(inputs.target), manifestText(manifest), { tempPath: inputs.tempPath, mode: 0o644 });
    } catch (error) {
      throw new FileWriteError(inputs.format, inputs.jobName, inputs.target, `writing the manifest ${inputs.tempPath}`, error);
    }
    return new PreparedManifest(inputs, manifest, file);
  }

  /** Renames the manifest into place; call right after the data file's rename (see the module comment). */
  async publish(): Promise<string> {
    try {
      // The data file's publish fsyncs this same directory right after; once is enough.
      await this.file.publish({ syncDirectory: false });
    } catch (error) {
      throw new FileWriteError(
        this.inputs.format,
        this.inputs.jobName,
        this.inputs.target,
        `renaming the manifest ${this.inputs.tempPath} onto ${this.file.target}`,
        error,
      );
    }
    return this.file.target;
  }

  discard(): Promise<void> {
    return this.file.discard();
  }
}
