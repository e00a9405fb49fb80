import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import { CommitOutcomeUnknown, type IcebergCatalog, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import type { TypedRow } from '../../transform/column.js';
import { writeDayFiles } from './day-files.js';
import { commitWithExpiry, housekeepingPolicy, type IcebergHousekeepingPolicy } from './expire-snapshots.js';
import {
  CommitConflict,
  IcebergCommitConflictError,
  IcebergDataFileUnreadableError,
  IcebergMetadataInvalidError,
  IcebergPartitionMismatchError,
} from './iceberg-errors.js';
import { newIcebergSchema } from './iceberg-schema.js';
import { childLocation, removeLocation, writeNewFile } from './local-files.js';
import { type LiveDataFile, type ParentManifest, readParentManifests, rewriteManifest } from './manifest-reading.js';
import { type AddedDataFile, type ManifestListEntry, manifestFile, manifestList, manifestListEntry } from './manifests.js';
import { type HousekeepingReport, removeUnreferencedFiles } from './orphan-files.js';
import { mergeKeyColumns, rewriteWithoutKeys, writeMergeFile } from './merge-rewrite.js';
import { type DayLayout, type DayPartitionOptions, dayBound, dayLayoutOf, daySpecOf, refusePartitioned, replacedDays } from './partition-spec.js';
import { fieldIdsOf, newSnapshotId } from './table-fields.js';
import { currentSchema, currentSnapshot, type PartitionSpec, RUN_ID_SUMMARY_KEY, snapshotOfRun } from './table-metadata.js';

/**
 * The write modes that overwrite part of a table, as one `overwrite` snapshot each:
 * - `partition`: the table is partitioned by day on a DATE or TIMESTAMP column; the run writes one
 *   data file per day it has rows for and removes the parent's files of the days it replaces (those
 *   days, or its window's every day), so days it does not cover are kept.
 * - `merge`: the run's rows in one file (lineage columns added); the parent's files holding any of
 *   its keys are rewritten without those rows (copy-on-write, no delete files).
 * Removed files are written as DELETED entries of a rewritten manifest (the specification's
 * "Manifests": status 2, the deleting snapshot's id), the other entries of that manifest as
 * EXISTING; manifests the run does not touch are carried as they are. On a conflict the table is
 * read again and what to remove is computed again on the new parent (a merge's rewrite of a file
 * is kept for the next try, its content depending only on the file and the run's keys), so a
 * concurrent writer's rows are neither lost nor doubled. Exactly once as table-writer.ts says.
 */
const DEFAULT_COMMIT_TRIES = 10;

type Columns = readonly { name: string; type: ColumnType }[];

/** table-writer.ts's options and result, for these two modes (its types are not imported back). */
export interface OverwriteRunOptions {
  catalog: IcebergCatalog;
  table: TableIdentifier;
  /** The tile's columns (without the lineage columns). */
  columns: Columns;
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  mode: 'partition' | 'merge';
  runId: string;
  extractedAtMs?: number;
  partition?: DayPartitionOptions;
  mergeKey?: readonly string[];
  maxCommitTries?: number;
  housekeeping?: Partial<IcebergHousekeepingPolicy>;
  now?: () => number;
  filesNow?: () => number;
}

interface OverwriteRunResult {
  committed: boolean;
  snapshotId: bigint;
  rows: number;
  tries: number;
  metadataLocation: string;
  housekeeping?: HousekeepingReport;
}
type FileSpecs = readonly { name: string; type: ColumnType; fieldId: number }[];

/** What a mode overwrites: its own files, and on each parent which of the parent's files go and which files replace them. */
interface Overwrite {
  own: AddedDataFile[];
  spec: PartitionSpec | undefined;
  onParent(
    data: readonly ParentManifest[],
    deletes: readonly ManifestListEntry[],
  ): Promise<{ removes: (file: LiveDataFile) => boolean; added: AddedDataFile[] }>;
  /** After the commit: files made for an earlier parent that the committed snapshot does not reference. */
  committed(added: readonly AddedDataFile[]): Promise<void>;
}

export async function writeOverwritingRun(options: OverwriteRunOptions, columns: Columns): Promise<OverwriteRunResult> {
  const { catalog, table, mode, runId } = options;
  const name = tableName(table);
  const now = options.now ?? Date.now;
  const policy = housekeepingPolicy(options.housekeeping);
  const partition = mode === 'partition' ? options.partition : undefined;
  if (mode === 'partition' && !partition) throw new IcebergPartitionMismatchError(name, 'writeMode partition needs a partition column');
  const schema = newIcebergSchema(columns);
  let base =
    (await catalog.loadTable(table)) ?? (await catalog.createTable(table, schema, partition ? { partitionSpec: daySpecOf(schema, partition.column) } : {}));
  const done = snapshotOfRun(base.metadata, runId);
  if (done) return { committed: false, snapshotId: done['snapshot-id'], rows: 0, tries: 0, metadataLocation: base.metadataLocation };
  // The table's layout first: a partitioned table is the reason a merge cannot write it, whatever its columns.
  const layout = partition ? dayLayoutOf(name, base.metadata, columns, partition) : undefined;
  if (!layout) refusePartitioned(name, base.metadata, mode);
  const fieldIds = fieldIdsOf(name, base.metadata, columns);
  const specs = columns.map((column, index) => ({ name: column.name, type: column.type, fieldId: fieldIds[index]! }));

  const snapshotId = newSnapshotId();
  const written: string[] = [];
  try {
    const overwrite = layout
      ? await dayOverwrite(options, name, base.metadata.location, layout, specs, written)
      : await mergeOverwrite(options, name, base.metadata.location, specs, now, written);
    const rows = Number(overwrite.own.reduce((sum, file) => sum + file.recordCount, 0n));
    const maxTries = options.maxCommitTries ?? DEFAULT_COMMIT_TRIES;
    for (let tries = 1; tries <= maxTries; tries++) {
      const { snapshot, tryFiles, added } = await snapshotOn(name, base, overwrite, { snapshotId, runId, tries, now });
      try {
        const committed = await commitWithExpiry(catalog, table, base, snapshot, policy, now());
        // Referenced by the table now: never deleted as this run's own, whatever follows.
        written.length = 0;
        await overwrite.committed(added);
        const housekeeping = await removeUnreferencedFiles({ before: base, after: committed, policy, nowMs: (options.filesNow ?? Date.now)() });
        return { committed: true, snapshotId, rows, tries, metadataLocation: committed.metadataLocation, housekeeping };
      } catch (error) {
        if (!(error instanceof CommitConflict) && !(error instanceof CommitOutcomeUnknown)) throw error;
        const reread = await catalog.loadTable(table);
        if (!reread) throw new IcebergMetadataInvalidError(name, 'the table is gone from the catalog', { cause: error });
        if (reread.metadata.snapshots?.some((candidate) => candidate['snapshot-id'] === snapshotId)) {
          written.length = 0;
          await overwrite.committed(added);
          const housekeeping = await removeUnreferencedFiles({ before: base, after: reread, policy, nowMs: (options.filesNow ?? Date.now)() });
          return { committed: true, snapshotId, rows, tries, metadataLocation: reread.metadataLocation, housekeeping };
        }
        const other = snapshotOfRun(reread.metadata, runId);
        if (other) return { committed: false, snapshotId: other['snapshot-id'], rows: 0, tries, metadataLocation: reread.metadataLocation };
        fieldIdsOf(name, reread.metadata, columns);
        await Promise.all(tryFiles.map((path) => removeLocation(path)));
        base = reread;
      }
    }
    throw new IcebergCommitConflictError(name, maxTries);
  } catch (error) {
    // Nothing of this run is referenced by the table: its files go with it.
    await Promise.allSettled(written.map((path) => removeLocation(path)));
    throw error;
  }
}

/** `partition`: a file per day of the run's rows; the parent's files of the days replaced go. */
async function dayOverwrite(
  options: OverwriteRunOptions,
  name: string,
  location: string,
  layout: DayLayout,
  specs: FileSpecs,
  written: string[],
): Promise<Overwrite> {
  const { column } = options.partition!;
  const days = await writeDayFiles({ tableLocation: location, runId: options.runId, layout, column, columns: specs, rows: options.rows, written });
  const replaced = replacedDays(layout, days.days);
  const field = layout.field.name;
  return {
    own: days.files,
    spec: layout.spec,
    async onParent(data) {
      const foreign = data.find((manifest) => manifest.listEntry.partition_spec_id !== layout.spec['spec-id']);
      if (foreign)
        throw new IcebergPartitionMismatchError(
          name,
          `manifest ${String(foreign.listEntry.manifest_path)} was written with partition spec ${String(foreign.listEntry.partition_spec_id)}, not the table's ${layout.spec['spec-id']}`,
        );
      return { removes: (file) => replaced.has(Number(file.partition[field])), added: days.files };
    },
    committed: async () => {},
  };
}

/** `merge`: the run's rows in one file; the parent's files holding its keys rewritten without them (each rewrite kept for later tries). */
async function mergeOverwrite(
  options: OverwriteRunOptions,
  name: string,
  location: string,
  specs: FileSpecs,
  now: () => number,
  written: string[],
): Promise<Overwrite> {
  const { runId } = options;
  const key = mergeKeyColumns(name, options.columns, options.mergeKey);
  const lineage = [runId, options.extractedAtMs ?? now()];
  const merged = await writeMergeFile({ table: name, tableLocation: location, runId, key, columns: specs, rows: options.rows, lineage, written });
  const rewrites = new Map<string, AddedDataFile | 'removed' | undefined>();
  return {
    own: [merged.file],
    spec: undefined,
    async onParent(data, deletes) {
      if (deletes.length > 0)
        throw new IcebergDataFileUnreadableError(
          name,
          String(deletes[0]!.manifest_path),
          'the table has delete files, which a copy-on-write merge does not apply',
        );
      const rewritten = new Set<string>();
      const added = [merged.file];
      for (const manifest of data)
        for (const { file } of manifest.entries) {
          if (!rewrites.has(file.path))
            rewrites.set(
              file.path,
              await rewriteWithoutKeys({ table: name, tableLocation: location, runId, file, key, keys: merged.keys, columns: specs, written }),
            );
          const rewrite = rewrites.get(file.path);
          if (rewrite === undefined) continue;
          rewritten.add(file.path);
          if (rewrite !== 'removed') added.push(rewrite);
        }
      return { removes: (file) => rewritten.has(file.path), added };
    },
    async committed(added) {
      const used = new Set(added.map((file) => file.path));
      const unused = [...rewrites.values()].filter((rewrite): rewrite is AddedDataFile => typeof rewrite === 'object' && !used.has(rewrite.path));
      await Promise.allSettled(unused.map((file) => removeLocation(file.path)));
    },
  };
}

/**
 * The snapshot on `base`'s current snapshot: the parent's manifests carried or rewritten, one
 * manifest of the files the run adds, the manifest list, the summary; the files written for this
 * try (removed if the commit is refused).
 */
async function snapshotOn(
  name: string,
  base: LoadedTable,
  overwrite: Overwrite,
  context: { snapshotId: bigint; runId: string; tries: number; now: () => number },
): Promise<{ snapshot: NewSnapshot; tryFiles: string[]; added: AddedDataFile[] }> {
  const { snapshotId } = context;
  const location = base.metadata.location;
  const parent = currentSnapshot(base.metadata);
  const sequenceNumber = (base.metadata['last-sequence-number'] ?? 0n) + 1n;
  const tryFiles: string[] = [];
  const { data, deletes } = await readParentManifests(name, parent);
  const { removes, added } = await overwrite.onParent(data, deletes);
  const entries: ManifestListEntry[] = [];
  const live = { files: 0n, records: 0n };
  const removed = { files: 0, records: 0n, bytes: 0n };
  for (const manifest of data) {
    for (const { file } of manifest.entries) {
      live.records += file.recordCount;
      live.files++;
    }
    const rewrite = rewriteManifest(manifest, snapshotId, removes);
    if (!rewrite) {
      entries.push(manifest.listEntry);
      continue;
    }
    const path = childLocation(location, `metadata/${randomUUID()}-m-rewrite.avro`);
    tryFiles.push(path);
    await writeNewFile(path, [rewrite.bytes]);
    entries.push(rewrite.listEntry(path, rewrite.bytes.length, sequenceNumber));
    removed.files += rewrite.removed.files;
    removed.records += rewrite.removed.records;
    removed.bytes += rewrite.removed.bytes;
  }
  entries.push(...deletes);
  if (added.length > 0) {
    const manifestPath = childLocation(location, `metadata/${randomUUID()}-m0.avro`);
    const { spec } = overwrite;
    const bytes = manifestFile({ schema: currentSchema(base.metadata), snapshotId, files: added, ...(spec ? { spec } : {}) });
    tryFiles.push(manifestPath);
    await writeNewFile(manifestPath, [bytes]);
    const partitions = spec ? { specId: spec['spec-id'], partitions: [daySummary(spec, added)] } : {};
    entries.push(manifestListEntry({ path: manifestPath, length: bytes.length, snapshotId, sequenceNumber, files: added, ...partitions }));
  }
  const listPath = childLocation(location, `metadata/snap-${snapshotId}-${context.tries}-${randomUUID()}.avro`);
  tryFiles.push(listPath);
  await writeNewFile(listPath, [manifestList({ snapshotId, parentSnapshotId: parent?.['snapshot-id'], sequenceNumber, entries })]);
  const addedRecords = added.reduce((sum, file) => sum + file.recordCount, 0n);
  const snapshot: NewSnapshot = {
    'snapshot-id': snapshotId,
    ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
    'sequence-number': sequenceNumber,
    // Never before the parent: readers order the snapshot log by time.
    'timestamp-ms': Math.max(context.now(), parent ? Number(parent['timestamp-ms']) + 1 : 0),
    'manifest-list': listPath,
    summary: {
      operation: 'overwrite',
      [RUN_ID_SUMMARY_KEY]: context.runId,
      'added-data-files': String(added.length),
      'added-records': String(addedRecords),
      'added-files-size': String(added.reduce((sum, file) => sum + file.sizeInBytes, 0n)),
      'deleted-data-files': String(removed.files),
      'deleted-records': String(removed.records),
      'removed-files-size': String(removed.bytes),
      'total-records': String(live.records - removed.records + addedRecords),
      'total-data-files': String(live.files - BigInt(removed.files) + BigInt(added.length)),
      'total-delete-files': parent?.summary['total-delete-files'] ?? '0',
      'total-position-deletes': parent?.summary['total-position-deletes'] ?? '0',
      'total-equality-deletes': parent?.summary['total-equality-deletes'] ?? '0',
    },
    'schema-id': base.metadata['current-schema-id'],
  };
  return { snapshot, tryFiles, added };
}

/** The manifest list's summary of the day field over the files a manifest adds (bounds as 4-byte days). */
function daySummary(spec: PartitionSpec, files: readonly AddedDataFile[]): ManifestListEntry {
  const field = spec.fields[0]!.name;
  const days = files.map((file) => Number(file.partition?.[field]));
  return {
    contains_null: false,
    contains_nan: null,
    lower_bound: dayBound(Math.min(...days)),
    upper_bound: dayBound(Math.max(...days)),
  };
}
