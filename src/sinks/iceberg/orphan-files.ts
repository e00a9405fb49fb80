import { basename, dirname, join } from 'node:path';
import { readAvroContainer } from './avro/avro-reader.js';
import type { LoadedTable } from './catalog.js';
import { DELETE_AFTER_COMMIT, type IcebergHousekeepingPolicy, propertiesOf } from './expire-snapshots.js';
import { abortUnfinishedUploads, childLocation, fileKeyOf, isLocalLocation, listLocation, readLocation, removeLocation } from './table-files.js';
import { readManifestList } from './manifests.js';

/**
 * The files of a table that nothing references any more, deleted after a run's commit is known to
 * have landed (never before: until then the table may still be the one that references them).
 *
 * Referenced is what the committed metadata reaches: its own file, the files of its metadata log,
 * statistics files, and for every kept snapshot its manifest list, the manifests listed there and
 * every file those manifests name. Two kinds of files go:
 * - dropped by the commit: referenced by the table the commit was based on and no longer by the
 *   table it made (the expired snapshots' lists, manifests and data files no kept snapshot shares;
 *   the metadata files trimmed from the log, when `write.metadata.delete-after-commit.enabled`).
 *   They were part of a committed table, so no writer has them in flight: deleted at once.
 * - orphans: a file under the table's `data/` or `metadata/` that the committed metadata does not
 *   reference, left by a run that failed, was refused or was killed before it could clean up. Such
 *   a file may also be another writer's, written and not yet committed: it is deleted only when
 *   its last write is older than `orphanMinAgeHours` (72 h by default), longer than any run. The
 *   folders are listed through the table's store (ObjectStore.tableFiles.list), whatever its kind:
 *   a local directory, a gs:// or an s3:// prefix, each file's age by its store's clock.
 * - unfinished uploads under the table's location begun before the same cutoff: an S3 multipart
 *   upload a killed run left (a large file goes straight to its final key), whose parts are kept
 *   and billed until aborted; Cloud Storage ends a resumable session itself, a local temp file is
 *   a listed file.
 * A listing that fails is a failure line of the report (the next run tries again), never the run's.
 * Hadoop's checksum files (`.name.crc`, written by a Java catalog on a local warehouse) go with
 * the file they check. When any referenced file cannot be read, nothing is deleted: the set of
 * what is referenced would be incomplete.
 */
export interface HousekeepingReport {
  /** Snapshots the commit removed. */
  expiredSnapshots: number;
  /** Files deleted (local paths; a bucket's as URLs). */
  deletedFiles: string[];
  /** Unfinished uploads aborted (S3 multipart uploads), as the URL each would have written. */
  abortedUploads: string[];
  /** What could not be done, one line each: left for the next run. */
  failures: string[];
}

type ReadCache = Map<string, string[]>;

/** Deletes what `after`'s commit dropped from `before`, and the orphans old enough; run only once `after` is known committed. */
export async function removeUnreferencedFiles(options: {
  before: LoadedTable;
  after: LoadedTable;
  policy: IcebergHousekeepingPolicy;
  /** Now on the clock of the files' modification times. */
  nowMs: number;
}): Promise<HousekeepingReport> {
  const { before, after, policy, nowMs } = options;
  const kept = new Set((after.metadata.snapshots ?? []).map((snapshot) => snapshot['snapshot-id']));
  const report: HousekeepingReport = {
    expiredSnapshots: (before.metadata.snapshots ?? []).filter((snapshot) => !kept.has(snapshot['snapshot-id'])).length,
    deletedFiles: [],
    abortedUploads: [],
    failures: [],
  };
  const cache: ReadCache = new Map();
  let referenced: References;
  let previously: References;
  try {
    referenced = await referencesOf(after, cache);
    previously = await referencesOf(before, cache);
  } catch (error) {
    report.failures.push(`the table's files were not tidied: ${(error as Error).message}`);
    return report;
  }
  const deleteMetadata = propertiesOf(after.metadata)[DELETE_AFTER_COMMIT] === 'true';
  const dropped = [...previously.files].filter((path) => !referenced.files.has(path) && (deleteMetadata || !previously.metadataFiles.has(path)));
  const orphanBefore = nowMs - policy.orphanMinAgeHours * 3_600_000;
  const orphans: string[] = [];
  if (Number.isFinite(orphanBefore)) {
    const { location } = after.metadata;
    for (const folder of ['data', 'metadata']) {
      for (const file of await listLocation(childLocation(location, folder)).catch(listFailed(report))) {
        if (referenced.files.has(checkedFileOf(file.location))) continue;
        if (file.modifiedMs <= orphanBefore) orphans.push(file.location);
      }
    }
    try {
      report.abortedUploads.push(...(await abortUnfinishedUploads(location, orphanBefore)));
    } catch (error) {
      report.failures.push(`unfinished uploads were not looked for: ${(error as Error).message}`);
    }
  }
  for (const path of new Set([...dropped, ...orphans])) {
    try {
      await removeLocation(path);
      if (isLocalLocation(path)) await removeLocation(join(dirname(path), `.${basename(path)}.crc`));
      report.deletedFiles.push(path);
    } catch (error) {
      report.failures.push(`${path} was not deleted: ${(error as Error).message}`);
    }
  }
  return report;
}

/**
 * The files under the table's `data/` and `metadata/` that its committed metadata does not
 * reference (what a failed, refused or killed run left, or a writer's files not yet committed),
 * with their last change: `status` names them, and when the housekeeping of a commit deletes them
 * (once older than `orphanMinAgeHours`). Reads only; a listing or a read that fails throws.
 */
export async function unreferencedFilesOf(table: LoadedTable): Promise<Array<{ location: string; modifiedMs: number }>> {
  const referenced = await referencesOf(table);
  const found: Array<{ location: string; modifiedMs: number }> = [];
  for (const folder of ['data', 'metadata']) {
    for (const file of await listLocation(childLocation(table.metadata.location, folder))) {
      if (!referenced.files.has(checkedFileOf(file.location))) found.push({ location: file.location, modifiedMs: file.modifiedMs });
    }
  }
  return found.sort((a, b) => a.location.localeCompare(b.location));
}

const listFailed = (report: HousekeepingReport) => (error: unknown) => {
  report.failures.push(`orphan files were not looked for: ${(error as Error).message}`);
  return [];
};

/** `.name.crc` is Hadoop's checksum of `name` beside it (on a local warehouse): referenced when `name` is. */
function checkedFileOf(path: string): string {
  if (!isLocalLocation(path)) return path;
  const match = /^\.(.+)\.crc$/.exec(basename(path));
  return match ? join(dirname(path), match[1]!) : path;
}

interface References {
  /** Every file the metadata reaches, as local paths (a bucket's as URLs). */
  files: Set<string>;
  /** Of those, the metadata files (the current one and its log). */
  metadataFiles: Set<string>;
}

/** Every file `table`'s metadata references, as local paths (a bucket's as URLs). */
export async function referencesOf(table: LoadedTable, cache: ReadCache = new Map()): Promise<References> {
  const { metadata } = table;
  const metadataFiles = new Set([table.metadataLocation, ...(metadata['metadata-log'] ?? []).map((entry) => entry['metadata-file'])].map(fileKeyOf));
  const files = new Set(metadataFiles);
  const loose = metadata as { statistics?: { 'statistics-path'?: string }[]; 'partition-statistics'?: { 'statistics-path'?: string }[] };
  for (const entry of [...(loose.statistics ?? []), ...(loose['partition-statistics'] ?? [])])
    if (typeof entry['statistics-path'] === 'string') files.add(fileKeyOf(entry['statistics-path']));
  for (const snapshot of metadata.snapshots ?? []) {
    const list = snapshot['manifest-list'];
    files.add(fileKeyOf(list));
    for (const manifest of await readCached(cache, list, (bytes) => readManifestList(bytes, list).map((entry) => String(entry.manifest_path)))) {
      files.add(fileKeyOf(manifest));
      for (const dataFile of await readCached(cache, manifest, (bytes) => filesOfManifest(bytes, manifest))) files.add(fileKeyOf(dataFile));
    }
  }
  return { files, metadataFiles };
}

async function readCached(cache: ReadCache, location: string, parse: (bytes: Buffer) => string[]): Promise<string[]> {
  const known = cache.get(location);
  if (known) return known;
  const paths = parse(await readLocation(location));
  cache.set(location, paths);
  return paths;
}

/** The data (and delete) files a manifest names, whatever each entry's status. */
function filesOfManifest(bytes: Buffer, source: string): string[] {
  return readAvroContainer(bytes, source).records.map((record) => String((record as { data_file: { file_path: string } }).data_file.file_path));
}
