import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import { CommitOutcomeUnknown, type IcebergCatalog, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import type { TypedRow } from '../../transform/column.js';
import { writeDayFiles } from './day-files.js';
import { HandoffChannel } from './handoff-channel.js';
import { commitWithExpiry, housekeepingPolicy, type IcebergHousekeepingPolicy } from './expire-snapshots.js';
import {
  CommitConflict,
  IcebergCommitConflictError,
  IcebergDataFileUnreadableError,
  IcebergMetadataInvalidError,
  IcebergPartitionMismatchError,
  IcebergSchemaMismatchError,
} from './iceberg-errors.js';
import { type IcebergSchema, newIcebergSchema } from './iceberg-schema.js';
import { childLocation, removeLocation, writeNewFile } from './local-files.js';
import { type LiveDataFile, type ParentManifest, readParentManifests, rewriteManifest } from './manifest-reading.js';
import { type AddedDataFile, type ManifestListEntry, manifestFile, manifestList, manifestListEntry } from './manifests.js';
import { type HousekeepingReport, removeUnreferencedFiles } from './orphan-files.js';
import { mergeKeyColumns, rewriteWithoutKeys, writeMergeFile } from './merge-rewrite.js';
import { type DayLayout, type DayPartitionOptions, dayBound, dayLayoutOf, daySpecOf, refusePartitioned, replacedDays } from './partition-spec.js';
import { fieldIdsOf, newSnapshotId } from './table-fields.js';
import { currentSchema, currentSnapshot, type PartitionSpec, RUN_ID_SUMMARY_KEY, snapshotOfRun, type TableMetadata } from './table-metadata.js';

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
  /** `merge`: of the run's rows sharing a key, the one with the highest value of this column stays. */
  latestBy?: string;
  maxCommitTries?: number;
  housekeeping?: Partial<IcebergHousekeepingPolicy>;
  now?: () => number;
  filesNow?: () => number;
  /** More of the run in the snapshot's summary (`tilehouse.*` keys: the window, when the run started, the definition). */
  summary?: Record<string, string>;
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
  /** `partition`: the days the run replaces (its rows' days, its window's every day). */
  days?: ReadonlySet<number>;
  onParent(
    data: readonly ParentManifest[],
    deletes: readonly ManifestListEntry[],
  ): Promise<{ removes: (file: LiveDataFile) => boolean; added: AddedDataFile[] }>;
  /** After the commit: files made for an earlier parent that the committed snapshot does not reference. */
  committed(added: readonly AddedDataFile[]): Promise<void>;
}

export async function writeOverwritingRun(options: OverwriteRunOptions, columns: Columns): Promise<OverwriteRunResult> {
  const run = await OverwriteRun.open(options, columns);
  if (run.done) return run.done;
  try {
    await run.writeFiles(options.rows);
    return await run.commit();
  } catch (error) {
    await run.discard();
    throw error;
  }
}

/** What a run's phases need: the options of writeOverwritingRun but its rows, which `stage` takes. */
export type OverwriteRunStart = Omit<OverwriteRunOptions, 'rows'> & {
  /** Where a table the catalog lacks is created, and created only by the commit; absent: created as the run opens. */
  newTableLocation?: string;
};

/**
 * One run of these modes in phases, as table-writer.ts's IcebergRun: `open` (the table's layout
 * checked), `stage` (the day files or the merge file written as the rows stream by; a merge's keys
 * checked), `commit` (the optimistic loop: what the parent loses is computed on each parent tried,
 * a merge's rewrites of the parent's files with it), or `discard` (the run's files removed unless
 * a commit's answer was lost and never settled).
 */
export class OverwriteRun {
  private readonly written: string[] = [];
  private readonly snapshotId = newSnapshotId();
  private overwrite: Overwrite | undefined;
  private mayBeCommitted = false;
  private readonly batches = new HandoffChannel<readonly TypedRow[]>();
  private staging: Promise<number> | undefined;
  private readonly name: string;
  private readonly policy: IcebergHousekeepingPolicy;

  private constructor(
    private readonly options: OverwriteRunStart,
    private readonly columns: Columns,
    /** The table as the run opened it; undefined: the catalog has none yet (the commit creates it). */
    private base: LoadedTable | undefined,
    readonly done: OverwriteRunResult | undefined,
    readonly location: string,
    private readonly layout: DayLayout | undefined,
    private readonly specs: FileSpecs,
  ) {
    this.name = tableName(options.table);
    this.policy = housekeepingPolicy(options.housekeeping);
  }

  static async open(options: OverwriteRunStart, columns: Columns): Promise<OverwriteRun> {
    const { catalog, table, mode, runId } = options;
    const name = tableName(table);
    const partition = mode === 'partition' ? options.partition : undefined;
    if (mode === 'partition' && !partition) throw new IcebergPartitionMismatchError(name, 'writeMode partition needs a partition column');
    const schema = newIcebergSchema(columns);
    const partitionSpec = partition ? daySpecOf(schema, partition.column) : undefined;
    let base = await catalog.loadTable(table);
    if (!base && options.newTableLocation === undefined) base = await catalog.createTable(table, schema, partitionSpec ? { partitionSpec } : {});
    const done = base && snapshotOfRun(base.metadata, runId);
    if (base && done)
      return new OverwriteRun(
        options,
        columns,
        base,
        { committed: false, snapshotId: done['snapshot-id'], rows: 0, tries: 0, metadataLocation: base.metadataLocation },
        base.metadata.location,
        undefined,
        [],
      );
    // A table the commit creates is checked as the one it will be: the run's schema, day(column).
    const metadata = base?.metadata ?? newTableMetadata(options.newTableLocation!, schema, partitionSpec);
    // The table's layout first: a partitioned table is the reason a merge cannot write it, whatever its columns.
    const layout = partition ? dayLayoutOf(name, metadata, columns, partition) : undefined;
    if (!layout) refusePartitioned(name, metadata, mode);
    const fieldIds = fieldIdsOf(name, metadata, columns);
    const specs = columns.map((column, index) => ({ name: column.name, type: column.type, fieldId: fieldIds[index]! }));
    return new OverwriteRun(options, columns, base, undefined, metadata.location, layout, specs);
  }

  /** A sink's rows as they arrive (`writeRows` waits for the run's files to take each batch), then `stage`. */
  async writeRows(batch: readonly TypedRow[]): Promise<void> {
    const staging = this.startStaging();
    await Promise.race([this.batches.push([batch]), staging.then(() => undefined)]);
  }

  /** Ends the rows `writeRows` handed over and waits for the run's files: everything but the commit. Returns the run's rows. */
  async stage(): Promise<number> {
    const staging = this.startStaging();
    this.batches.end();
    return staging;
  }

  private startStaging(): Promise<number> {
    if (this.staging === undefined) {
      this.staging = this.writeFiles(this.batches);
      // Its failure is the next writeRows' or stage's; never an unhandled rejection meanwhile.
      this.staging.catch(() => undefined);
    }
    return this.staging;
  }

  /** Writes the run's own files as `rows` stream by (the merge's keys checked): everything but the commit. Returns the run's rows. */
  async writeFiles(rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>): Promise<number> {
    const now = this.options.now ?? Date.now;
    const { layout, name, location, specs, written } = this;
    const options = { ...this.options, rows };
    this.overwrite = layout
      ? await dayOverwrite(options, name, location, layout, specs, written)
      : await mergeOverwrite(options, name, location, specs, now, written);
    return Number(this.overwrite.own.reduce((sum, file) => sum + file.recordCount, 0n));
  }

  /** The one catalog commit (after `stage`), with its optimistic retries; creates the table first when the catalog has none. */
  async commit(): Promise<OverwriteRunResult> {
    const { catalog, table, runId } = this.options;
    const { name, columns, policy, snapshotId, written } = this;
    const overwrite = this.overwrite;
    if (!overwrite) throw new Error(`Iceberg table ${name}: commit before stage`);
    const now = this.options.now ?? Date.now;
    const partitionSpec = this.layout?.spec;
    let base =
      this.base ??
      (await catalog.loadTable(table)) ??
      (await catalog.createTable(table, newIcebergSchema(columns), { location: this.options.newTableLocation, ...(partitionSpec ? { partitionSpec } : {}) }));
    const already = snapshotOfRun(base.metadata, runId);
    if (already) return { committed: false, snapshotId: already['snapshot-id'], rows: 0, tries: 0, metadataLocation: base.metadataLocation };
    this.checkTable(base);
    const rows = Number(overwrite.own.reduce((sum, file) => sum + file.recordCount, 0n));
    const maxTries = this.options.maxCommitTries ?? DEFAULT_COMMIT_TRIES;
    for (let tries = 1; tries <= maxTries; tries++) {
      const { snapshot, tryFiles, added } = await snapshotOn(name, base, overwrite, { snapshotId, runId, tries, now, summary: this.options.summary });
      written.push(...tryFiles);
      try {
        const committed = await commitWithExpiry(catalog, table, base, snapshot, policy, now());
        // Referenced by the table now: never deleted as this run's own, whatever follows.
        written.length = 0;
        await overwrite.committed(added);
        const housekeeping = await removeUnreferencedFiles({ before: base, after: committed, policy, nowMs: (this.options.filesNow ?? Date.now)() });
        return { committed: true, snapshotId, rows, tries, metadataLocation: committed.metadataLocation, housekeeping };
      } catch (error) {
        if (!(error instanceof CommitConflict) && !(error instanceof CommitOutcomeUnknown)) throw error;
        if (error instanceof CommitOutcomeUnknown) this.mayBeCommitted = true;
        const reread = await catalog.loadTable(table);
        if (!reread) throw new IcebergMetadataInvalidError(name, 'the table is gone from the catalog', { cause: error });
        if (reread.metadata.snapshots?.some((candidate) => candidate['snapshot-id'] === snapshotId)) {
          written.length = 0;
          await overwrite.committed(added);
          const housekeeping = await removeUnreferencedFiles({ before: base, after: reread, policy, nowMs: (this.options.filesNow ?? Date.now)() });
          return { committed: true, snapshotId, rows, tries, metadataLocation: reread.metadataLocation, housekeeping };
        }
        // The table, read again, does not hold it: whatever was lost did not land.
        this.mayBeCommitted = false;
        const other = snapshotOfRun(reread.metadata, runId);
        if (other) return { committed: false, snapshotId: other['snapshot-id'], rows: 0, tries, metadataLocation: reread.metadataLocation };
        this.checkTable(reread);
        const tried = new Set(tryFiles);
        await Promise.all(tryFiles.map((path) => removeLocation(path)));
        this.written.splice(0, this.written.length, ...written.filter((path) => !tried.has(path)));
        base = reread;
      }
    }
    throw new IcebergCommitConflictError(name, maxTries);
  }

  /** The table a commit is tried on must still be the one the run's files were written for (another writer may have created it meanwhile). */
  private checkTable(loaded: LoadedTable): void {
    const ids = fieldIdsOf(this.name, loaded.metadata, this.columns);
    if (ids.some((id, index) => id !== this.specs[index]!.fieldId))
      throw new IcebergSchemaMismatchError(
        this.name,
        `the table's field ids (${ids.join(', ')}) are not the ones this run's data files carry (${this.specs.map((spec) => spec.fieldId).join(', ')})`,
      );
    if (this.layout) dayLayoutOf(this.name, loaded.metadata, this.columns, this.options.partition!);
    else refusePartitioned(this.name, loaded.metadata, this.options.mode);
  }

  /** Removes what the run wrote, unless a commit's answer was lost and never settled. Idempotent. */
  async discard(): Promise<void> {
    this.batches.fail(new Error('the run was discarded'));
    await this.staging?.catch(() => undefined);
    if (this.mayBeCommitted) return;
    const paths = this.written.splice(0);
    await Promise.allSettled(paths.map((path) => removeLocation(path)));
  }

  get outcomeUnknown(): boolean {
    return this.mayBeCommitted;
  }

  /** After `stage`, the days a `partition` run replaces (the publish guard's question); undefined before, and for a merge. */
  get replacedDays(): ReadonlySet<number> | undefined {
    return this.overwrite?.days;
  }

  files(): readonly string[] {
    return this.written;
  }
}

/** The metadata of the table a first run's commit creates, for checking the run against before it exists. */
function newTableMetadata(location: string, schema: IcebergSchema, spec: PartitionSpec | undefined): TableMetadata {
  return {
    'format-version': 2,
    'table-uuid': '',
    location,
    'last-updated-ms': 0n,
    'last-column-id': Math.max(0, ...schema.fields.map((field) => field.id)),
    'current-schema-id': schema['schema-id'],
    schemas: [schema],
    'default-spec-id': 0,
    'partition-specs': [spec ?? { 'spec-id': 0, fields: [] }],
  } as TableMetadata;
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
    days: replaced,
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
  const key = mergeKeyColumns(name, options.columns, options.mergeKey, options.latestBy);
  const lineage = [runId, options.extractedAtMs ?? now()];
  const merged = await writeMergeFile({ table: name, tableLocation: location, runId, key, columns: specs, rows: options.rows, lineage, written });
  const keyFieldIds = key.indexes.map((index) => specs[index]!.fieldId);
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
          // A file whose bounds exclude the run's keys holds none of them: kept unread.
          if (!rewrites.has(file.path) && !merged.values.mayBeIn(file, keyFieldIds)) rewrites.set(file.path, undefined);
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
  context: { snapshotId: bigint; runId: string; tries: number; now: () => number; summary: Record<string, string> | undefined },
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
      ...context.summary,
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
