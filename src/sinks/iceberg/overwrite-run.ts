import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import { type LoadedTable, type NewSnapshot, tableName } from './catalog.js';
import type { TypedRow } from '../../transform/column.js';
import { writeDayFiles } from './day-files.js';
import { HandoffChannel } from './handoff-channel.js';
import { IcebergDataFileUnreadableError, IcebergPartitionMismatchError } from './iceberg-errors.js';
import { type IcebergSchema, newIcebergSchema } from './iceberg-schema.js';
import { childLocation, removeLocation } from './local-files.js';
import { type LiveDataFile, type ParentManifest, readParentManifests, rewriteManifest } from './manifest-reading.js';
import { type AddedDataFile, type ManifestListEntry, manifestFile, manifestListEntry } from './manifests.js';
import { mergeKeyColumns, rewriteWithoutKeys, writeMergeFile } from './merge-rewrite.js';
import { type DayLayout, type DayPartitionOptions, dayBound, dayLayoutOf, daySpecOf, refusePartitioned, replacedDays } from './partition-spec.js';
import { heldRunSchema, type RunSchema } from './schema-contract.js';
import { type Columns, type CommitAttempt, type IcebergRunResult, type OpenedTable, openTable, TableRun, type TableRunStart } from './table-run.js';
import { currentSnapshot, type PartitionSpec, RUN_ID_SUMMARY_KEY, type TableMetadata } from './table-metadata.js';

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
 * concurrent writer's rows are neither lost nor doubled. Exactly once, and the commit loop, as table-run.ts says.
 */

/** table-writer.ts's options and result, for these two modes (its types are not imported back). */
export interface OverwriteRunOptions extends TableRunStart {
  /** The tile's columns (without the lineage columns). */
  columns: Columns;
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  mode: 'partition' | 'merge';
  extractedAtMs?: number;
  partition?: DayPartitionOptions;
  mergeKey?: readonly string[];
  /** `merge`: of the run's rows sharing a key, the one with the highest value of this column stays. */
  latestBy?: string;
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

/** A try's snapshot and the data files it adds (the run's own, a merge's rewrites on that parent). */
type OverwriteAttempt = CommitAttempt & { added: AddedDataFile[] };

export async function writeOverwritingRun(options: OverwriteRunOptions, columns: Columns): Promise<IcebergRunResult> {
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
export type OverwriteRunStart = Omit<OverwriteRunOptions, 'rows'>;

/**
 * One run of these modes in phases, as table-writer.ts's IcebergRun: `open` (the table's layout
 * checked), `stage` (the day files or the merge file written as the rows stream by; a merge's keys
 * checked), `commit` (table-run.ts's optimistic loop: what the parent loses is computed on each
 * parent tried, a merge's rewrites of the parent's files with it), or `discard` (the run's files
 * removed unless a commit's answer was lost and never settled).
 */
export class OverwriteRun extends TableRun<OverwriteAttempt> {
  private overwrite: Overwrite | undefined;
  private readonly batches = new HandoffChannel<readonly TypedRow[]>();
  private staging: Promise<number> | undefined;
  private readonly specs: FileSpecs;

  private constructor(
    private readonly options: OverwriteRunStart,
    columns: Columns,
    opened: OpenedTable,
    runSchema: RunSchema,
    private readonly layout: DayLayout | undefined,
    partitionSpec: PartitionSpec | undefined,
  ) {
    super(options, columns, opened.base, opened.done, opened.location, runSchema, partitionSpec);
    this.specs = columns.map((column, index) => ({ name: column.name, type: column.type, fieldId: runSchema.fieldIds[index]! }));
  }

  static async open(options: OverwriteRunStart, columns: Columns): Promise<OverwriteRun> {
    const { mode } = options;
    const name = tableName(options.table);
    const partition = mode === 'partition' ? options.partition : undefined;
    if (mode === 'partition' && !partition) throw new IcebergPartitionMismatchError(name, 'writeMode partition needs a partition column');
    const partitionSpec = partition ? daySpecOf(newIcebergSchema(columns), partition.column) : undefined;
    const opened = await openTable(options, columns, partitionSpec);
    if (opened.done) return new OverwriteRun(options, columns, opened, heldRunSchema(opened.metadata), undefined, partitionSpec);
    // The table's layout first: a partitioned table is the reason a merge cannot write it, whatever its columns.
    const layout = partition ? dayLayoutOf(name, opened.metadata, columns, partition) : undefined;
    if (!layout) refusePartitioned(name, opened.metadata, mode);
    return new OverwriteRun(options, columns, opened, TableRun.schemaOf(options, opened.metadata, columns), layout, partitionSpec);
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
    return this.stagedRows();
  }

  protected stagedRows(): number {
    if (!this.overwrite) throw new Error(`Iceberg table ${this.name}: commit before stage`);
    return Number(this.overwrite.own.reduce((sum, file) => sum + file.recordCount, 0n));
  }

  protected attemptOn(base: LoadedTable, tries: number, schema: IcebergSchema): Promise<OverwriteAttempt> {
    return this.snapshotOn(base, tries, schema);
  }

  protected checkLayout(metadata: TableMetadata): void {
    if (this.layout) dayLayoutOf(this.name, metadata, this.columns, this.options.partition!);
    else refusePartitioned(this.name, metadata, this.options.mode);
  }

  protected override async landed(attempt: OverwriteAttempt): Promise<void> {
    await this.overwrite!.committed(attempt.added);
  }

  protected async stopStaging(): Promise<void> {
    this.batches.fail(new Error('the run was discarded'));
    await this.staging?.catch(() => undefined);
  }

  /** After `stage`, the days a `partition` run replaces (the publish guard's question); undefined before, and for a merge. */
  get replacedDays(): ReadonlySet<number> | undefined {
    return this.overwrite?.days;
  }

  /**
   * The snapshot on `base`'s current snapshot: the parent's manifests carried or rewritten, one
   * manifest of the files the run adds, the manifest list, the summary; the files written for this
   * try (removed if the commit is refused).
   */
  private async snapshotOn(base: LoadedTable, tries: number, schema: IcebergSchema): Promise<OverwriteAttempt> {
    const { snapshotId, name } = this;
    const overwrite = this.overwrite!;
    const location = base.metadata.location;
    const parent = currentSnapshot(base.metadata);
    const sequenceNumber = this.sequenceOn(base);
    const files: string[] = [];
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
      await this.track(path, [rewrite.bytes], files);
      entries.push(rewrite.listEntry(path, rewrite.bytes.length, sequenceNumber));
      removed.files += rewrite.removed.files;
      removed.records += rewrite.removed.records;
      removed.bytes += rewrite.removed.bytes;
    }
    entries.push(...deletes);
    if (added.length > 0) {
      const manifestPath = childLocation(location, `metadata/${randomUUID()}-m0.avro`);
      const { spec } = overwrite;
      const bytes = manifestFile({ schema, snapshotId, files: added, ...(spec ? { spec } : {}) });
      await this.track(manifestPath, [bytes], files);
      const partitions = spec ? { specId: spec['spec-id'], partitions: [daySummary(spec, added)] } : {};
      entries.push(manifestListEntry({ path: manifestPath, length: bytes.length, snapshotId, sequenceNumber, files: added, ...partitions }));
    }
    const addedRecords = added.reduce((sum, file) => sum + file.recordCount, 0n);
    const summary: NewSnapshot['summary'] = {
      operation: 'overwrite',
      [RUN_ID_SUMMARY_KEY]: this.options.runId,
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
    };
    return { snapshot: await this.snapshotWith(base, tries, entries, summary, schema, files), files, added };
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
