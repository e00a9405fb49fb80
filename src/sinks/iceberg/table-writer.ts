import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import type { TypedRow } from '../../transform/column.js';
import { DataFileEncoder } from './data-file-encoder.js';
import { CommitOutcomeUnknown, type IcebergCatalog, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import { CommitConflict, IcebergCommitConflictError, IcebergMetadataInvalidError, IcebergSchemaMismatchError } from './iceberg-errors.js';
import { HandoffChannel } from './handoff-channel.js';
import { commitWithExpiry, housekeepingPolicy, type IcebergHousekeepingPolicy } from './expire-snapshots.js';
import { newIcebergSchema } from './iceberg-schema.js';
import { childLocation, readLocation, removeLocation, writeNewFile } from './local-files.js';
import { type AddedDataFile, manifestFile, manifestList, manifestListEntry, readManifestList } from './manifests.js';
import { type HousekeepingReport, removeUnreferencedFiles } from './orphan-files.js';
import { writeOverwritingRun } from './overwrite-run.js';
import { type DayPartitionOptions, refusePartitioned } from './partition-spec.js';
import { fieldIdsOf, newSnapshotId } from './table-fields.js';
import { currentSchema, currentSnapshot, RUN_ID_SUMMARY_KEY, snapshotOfRun } from './table-metadata.js';

/**
 * One run into an Iceberg table: the rows as one Parquet data file (each column with its field
 * id), a manifest listing it, a manifest list, and one snapshot committed through the catalog's
 * optimistic commit. `replace` makes the run's file the whole table (an `overwrite` snapshot whose
 * manifest list holds only the new manifest); `append` keeps every manifest of the parent and adds
 * the lineage columns `_run_id` and `_extracted_at`.
 *
 * Exactly once: the run id is in the snapshot's summary (`tilehouse.run-id`), so a run that finds
 * its id on the snapshots `main` reaches commits nothing. A conflict (another writer's snapshot
 * landed first) re-reads the table, checks the run id again, and rebuilds the manifest list on the
 * new parent, within `maxCommitTries`; a lost answer is judged by reading the table.
 *
 * `partition` and `merge` overwrite part of the table (overwrite-run.ts): the days the run covers,
 * or the files holding its keys, recomputed on each parent a commit is tried on.
 */
export type IcebergWriteMode = 'replace' | 'append' | 'partition' | 'merge';

export interface IcebergRunOptions {
  catalog: IcebergCatalog;
  table: TableIdentifier;
  columns: readonly { name: string; type: ColumnType }[];
  /** Batches of typed rows in the columns' order. */
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  mode: IcebergWriteMode;
  runId: string;
  /** The instant of the run's extraction, for `_extracted_at` (append, merge). */
  extractedAtMs?: number;
  /** `partition`: the DATE or TIMESTAMP column the table is partitioned by day on, and the run's window. */
  partition?: DayPartitionOptions;
  /** `merge`: the key columns (one row per key in a run, none null). */
  mergeKey?: readonly string[];
  /** `merge`: of the run's rows sharing a key, the one with the highest value of this column stays. */
  latestBy?: string;
  maxCommitTries?: number;
  /** Snapshot expiry and file cleanup (expire-snapshots.ts); DEFAULT_HOUSEKEEPING's values where not given. */
  housekeeping?: Partial<IcebergHousekeepingPolicy>;
  /** The clock of snapshot times and their expiry (a catalog refuses a snapshot ahead of its own clock). */
  now?: () => number;
  /** The clock a leftover file's age is read against (its modification time is the file system's): Date.now. */
  filesNow?: () => number;
  /** More of the run in the snapshot's summary (`tilehouse.*` keys: the window, when the run started). */
  summary?: Record<string, string>;
}

export interface IcebergRunResult {
  /** False when the table already held this run's snapshot: nothing was written. */
  committed: boolean;
  snapshotId: bigint;
  /** Rows of this run's data file (0 when not committed). */
  rows: number;
  /** Commits sent (conflicts included). */
  tries: number;
  metadataLocation: string;
  /** What the commit expired and the files deleted after it (absent when nothing was committed). */
  housekeeping?: HousekeepingReport;
}

/** The lineage columns an append adds, as the BigQuery and PostgreSQL sinks name them. */
export const LINEAGE_COLUMNS = [
  { name: '_run_id', type: 'STRING' },
  { name: '_extracted_at', type: 'TIMESTAMP' },
] as const;

const DEFAULT_COMMIT_TRIES = 10;

/** What a run's phases need: the options of writeIcebergRun but its rows, which come by `writeRows`. */
export type IcebergRunStart = Omit<IcebergRunOptions, 'rows'> & {
  /**
   * Where a table the catalog lacks is created, and created only by the commit (a failed run leaves
   * no empty table behind); absent: the catalog picks the location and the table is created as
   * the run opens.
   */
  newTableLocation?: string;
};

/** One run in phases: open, `writeRows` (streamed into the data file), `stage` (the manifest), `commit`, or `discard`. */
export async function writeIcebergRun(options: IcebergRunOptions): Promise<IcebergRunResult> {
  if (options.mode === 'partition' || options.mode === 'merge') return writeOverwritingRun({ ...options, mode: options.mode }, columnsOf(options));
  const run = await IcebergRun.open(options);
  if (run.done) return run.done;
  try {
    for await (const batch of options.rows) await run.writeRows(batch);
    await run.stage();
    return await run.commit();
  } catch (error) {
    await run.discard();
    throw error;
  }
}

/**
 * A run's files as they are written: the data file streams while rows arrive (`writeRows` waits
 * for the file to take each batch), the manifest follows it (`stage`), and nothing the table
 * references exists before `commit`, whose optimistic loop is writeIcebergRun's. `discard`
 * removes what the run wrote unless a commit may have landed (its answer lost and never settled).
 */
export class IcebergRun {
  private readonly written: string[] = [];
  private readonly snapshotId = newSnapshotId();
  private readonly pieces = new HandoffChannel<Uint8Array>();
  private writing: Promise<number> | undefined;
  private dataFile: AddedDataFile | undefined;
  private manifest: { path: string; bytes: Uint8Array } | undefined;
  /** A commit was sent and what became of it is not known: the files may be the table's now. */
  private mayBeCommitted = false;
  private readonly name: string;
  private readonly columns: { name: string; type: ColumnType }[];
  private readonly policy: IcebergHousekeepingPolicy;

  private constructor(
    private readonly options: IcebergRunStart,
    /** The table as the run opened it; undefined: the catalog has none yet (the commit creates it). */
    private base: LoadedTable | undefined,
    /** The run's snapshot when the table already holds it: nothing is written. */
    readonly done: IcebergRunResult | undefined,
    /** The table's location (or the one the commit creates it at). */
    readonly location: string,
    private readonly fieldIds: number[],
    private readonly encoder: DataFileEncoder,
  ) {
    this.name = tableName(options.table);
    this.columns = columnsOf(options);
    this.policy = housekeepingPolicy(options.housekeeping);
  }

  static async open(options: IcebergRunStart): Promise<IcebergRun> {
    const { catalog, table, runId } = options;
    const name = tableName(table);
    const columns = columnsOf(options);
    const schema = newIcebergSchema(columns);
    let base = await catalog.loadTable(table);
    if (!base && options.newTableLocation === undefined) base = await catalog.createTable(table, schema);
    const done = base && snapshotOfRun(base.metadata, runId);
    // replace and append write unpartitioned manifests: a day-partitioned table is partition's.
    if (base && !done) refusePartitioned(name, base.metadata, options.mode);
    const result = done ? { committed: false, snapshotId: done['snapshot-id'], rows: 0, tries: 0, metadataLocation: base!.metadataLocation } : undefined;
    // A new table's field ids are 1..n in column order, as every catalog assigns them to a fresh schema.
    const fieldIds = base ? fieldIdsOf(name, base.metadata, columns) : schema.fields.map((field) => field.id);
    const encoder = new DataFileEncoder(columns.map((column, index) => ({ name: column.name, type: column.type, fieldId: fieldIds[index]! })));
    const location = base ? base.metadata.location : options.newTableLocation!;
    return new IcebergRun(options, base, result, location, fieldIds, encoder);
  }

  /** Where the data file goes; its writing starts with the first batch. */
  private startWriting(): void {
    if (this.writing !== undefined) return;
    const dataPath = childLocation(this.location, `data/${this.options.runId.replaceAll(/[^\w.-]/g, '_')}-${randomUUID()}.parquet`);
    this.written.push(dataPath);
    this.writing = writeNewFile(dataPath, this.pieces);
    // Its failure is the next writeRows' or stage's; never an unhandled rejection meanwhile.
    this.writing.catch(() => undefined);
  }

  private lineage(): readonly (string | number)[] {
    if (this.options.mode !== 'append') return [];
    return [this.options.runId, this.options.extractedAtMs ?? (this.options.now ?? Date.now)()];
  }

  async writeRows(batch: readonly TypedRow[]): Promise<void> {
    this.startWriting();
    const lineage = this.lineage();
    const pieces = this.encoder.addRows(lineage.length === 0 ? batch : batch.map((row) => [...row, ...lineage]));
    await Promise.race([this.pieces.push(pieces), this.writing!.then(() => undefined)]);
  }

  /** Closes the data file and writes its manifest: everything but the commit. Returns the run's rows. */
  async stage(): Promise<number> {
    this.startWriting();
    await Promise.race([this.pieces.push(this.encoder.finish()), this.writing!.then(() => undefined)]);
    this.pieces.end();
    const size = await this.writing!;
    const dataFile: AddedDataFile = {
      path: this.written[0]!,
      recordCount: BigInt(this.encoder.rowCount),
      sizeInBytes: BigInt(size),
      metrics: this.encoder.metrics(),
    };
    const manifestPath = childLocation(this.location, `metadata/${randomUUID()}-m0.avro`);
    const schema = this.base ? currentSchema(this.base.metadata) : newIcebergSchema(this.columns);
    const bytes = manifestFile({ schema, snapshotId: this.snapshotId, files: [dataFile] });
    this.written.push(manifestPath);
    await writeNewFile(manifestPath, [bytes]);
    this.dataFile = dataFile;
    this.manifest = { path: manifestPath, bytes };
    return this.encoder.rowCount;
  }

  /** The one catalog commit (after `stage`), with its optimistic retries; creates the table first when the catalog has none. */
  async commit(): Promise<IcebergRunResult> {
    const { catalog, table, mode, runId } = this.options;
    const { name } = this;
    const dataFile = this.dataFile;
    const manifest = this.manifest;
    if (!dataFile || !manifest) throw new Error(`Iceberg table ${name}: commit before stage`);
    const now = this.options.now ?? Date.now;
    let base =
      this.base ??
      (await catalog.loadTable(table)) ??
      (await catalog.createTable(table, newIcebergSchema(this.columns), { location: this.options.newTableLocation }));
    const already = snapshotOfRun(base.metadata, runId);
    if (already) return { committed: false, snapshotId: already['snapshot-id'], rows: 0, tries: 0, metadataLocation: base.metadataLocation };
    this.checkFieldIds(base);
    const { snapshotId } = this;
    const maxTries = this.options.maxCommitTries ?? DEFAULT_COMMIT_TRIES;
    for (let tries = 1; tries <= maxTries; tries++) {
      const parent = currentSnapshot(base.metadata);
      const sequenceNumber = (base.metadata['last-sequence-number'] ?? 0n) + 1n;
      const own = manifestListEntry({ path: manifest.path, length: manifest.bytes.length, snapshotId, sequenceNumber, files: [dataFile] });
      const carried = mode === 'append' && parent ? readManifestList(await readLocation(parent['manifest-list']), parent['manifest-list']) : [];
      const listPath = childLocation(this.location, `metadata/snap-${snapshotId}-${tries}-${randomUUID()}.avro`);
      this.written.push(listPath);
      await writeNewFile(listPath, [manifestList({ snapshotId, parentSnapshotId: parent?.['snapshot-id'], sequenceNumber, entries: [...carried, own] })]);
      const snapshot: NewSnapshot = {
        'snapshot-id': snapshotId,
        ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
        'sequence-number': sequenceNumber,
        // Never before the parent: readers order the snapshot log by time.
        'timestamp-ms': Math.max(now(), parent ? Number(parent['timestamp-ms']) + 1 : 0),
        'manifest-list': listPath,
        summary: { ...summaryOf(mode, runId, dataFile, parent?.summary), ...this.options.summary },
        'schema-id': base.metadata['current-schema-id'],
      };
      try {
        const committed = await commitWithExpiry(catalog, table, base, snapshot, this.policy, now());
        this.written.length = 0;
        const housekeeping = await removeUnreferencedFiles({
          before: base,
          after: committed,
          policy: this.policy,
          nowMs: (this.options.filesNow ?? Date.now)(),
        });
        return { committed: true, snapshotId, rows: Number(dataFile.recordCount), tries, metadataLocation: committed.metadataLocation, housekeeping };
      } catch (error) {
        if (!(error instanceof CommitConflict) && !(error instanceof CommitOutcomeUnknown)) throw error;
        if (error instanceof CommitOutcomeUnknown) this.mayBeCommitted = true;
        const reread = await catalog.loadTable(table);
        if (!reread) throw new IcebergMetadataInvalidError(name, 'the table is gone from the catalog', { cause: error });
        // A lost answer to a commit that landed: the table holds this very snapshot.
        if (reread.metadata.snapshots?.some((candidate) => candidate['snapshot-id'] === snapshotId)) {
          this.written.length = 0;
          const housekeeping = await removeUnreferencedFiles({
            before: base,
            after: reread,
            policy: this.policy,
            nowMs: (this.options.filesNow ?? Date.now)(),
          });
          return { committed: true, snapshotId, rows: Number(dataFile.recordCount), tries, metadataLocation: reread.metadataLocation, housekeeping };
        }
        // The table, read again, does not hold it: whatever was lost did not land, and the metadata
        // file the lost commit would have made current (JDBC's) is no table's.
        this.mayBeCommitted = false;
        if (error instanceof CommitOutcomeUnknown && error.metadataLocation !== undefined) await removeLocation(error.metadataLocation);
        // Another process committed this run id meanwhile: it is published once, by it.
        const other = snapshotOfRun(reread.metadata, runId);
        if (other) return { committed: false, snapshotId: other['snapshot-id'], rows: 0, tries, metadataLocation: reread.metadataLocation };
        this.checkFieldIds(reread);
        await removeLocation(this.written.pop()!);
        base = reread;
      }
    }
    throw new IcebergCommitConflictError(name, maxTries);
  }

  /** The field ids the data file carries must be the table's (another writer may have created it meanwhile). */
  private checkFieldIds(loaded: LoadedTable): void {
    const ids = fieldIdsOf(this.name, loaded.metadata, this.columns);
    if (ids.some((id, index) => id !== this.fieldIds[index]))
      throw new IcebergSchemaMismatchError(
        this.name,
        `the table's field ids (${ids.join(', ')}) are not the ones this run's data file carries (${this.fieldIds.join(', ')})`,
      );
  }

  /**
   * Removes what the run wrote, unless a commit's answer was lost and never settled (the files
   * may be the table's now: the run's re-run finds its snapshot or not). Idempotent.
   */
  async discard(): Promise<void> {
    this.pieces.fail(new Error('the run was discarded'));
    await this.writing?.catch(() => undefined);
    if (this.mayBeCommitted) return;
    const paths = this.written.splice(0);
    await Promise.allSettled(paths.map((path) => removeLocation(path)));
  }

  /** A commit was sent and the table could not tell whether it landed (after `commit` threw). */
  get outcomeUnknown(): boolean {
    return this.mayBeCommitted;
  }

  /** The files the run wrote and still owns (for a report of what an abort could not remove). */
  files(): readonly string[] {
    return this.written;
  }
}

/** The table's columns: the tile's, and the lineage columns for the modes that keep rows of earlier runs (append, merge). */
function columnsOf(options: Pick<IcebergRunStart, 'mode' | 'columns'>): { name: string; type: ColumnType }[] {
  return options.mode === 'append' || options.mode === 'merge' ? [...options.columns, ...LINEAGE_COLUMNS] : [...options.columns];
}

function summaryOf(mode: IcebergWriteMode, runId: string, file: AddedDataFile, parent: Record<string, string> | undefined): NewSnapshot['summary'] {
  const parentRecords = BigInt(parent?.['total-records'] ?? '0');
  const parentFiles = BigInt(parent?.['total-data-files'] ?? '0');
  const added = { 'added-data-files': '1', 'added-records': String(file.recordCount), 'added-files-size': String(file.sizeInBytes) };
  if (mode === 'append') {
    return {
      operation: 'append',
      [RUN_ID_SUMMARY_KEY]: runId,
      ...added,
      'total-records': String(parentRecords + file.recordCount),
      'total-data-files': String(parentFiles + 1n),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    };
  }
  return {
    operation: 'overwrite',
    [RUN_ID_SUMMARY_KEY]: runId,
    ...added,
    'deleted-data-files': String(parentFiles),
    'deleted-records': String(parentRecords),
    'total-records': String(file.recordCount),
    'total-data-files': '1',
    'total-delete-files': '0',
    'total-position-deletes': '0',
    'total-equality-deletes': '0',
  };
}
