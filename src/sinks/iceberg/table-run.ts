import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import { CommitOutcomeUnknown, type IcebergCatalog, type LoadedTable, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import { commitWithExpiry, housekeepingPolicy, type IcebergHousekeepingPolicy } from './expire-snapshots.js';
import { CommitConflict, IcebergCommitConflictError, IcebergMetadataInvalidError, IcebergSchemaMismatchError } from './iceberg-errors.js';
import { type IcebergSchema, newIcebergSchema } from './iceberg-schema.js';
import { childLocation, removeLocation, writeNewFile } from './local-files.js';
import { type ManifestListEntry, manifestList } from './manifests.js';
import { type HousekeepingReport, removeUnreferencedFiles } from './orphan-files.js';
import { type RunSchema, runSchemaOn, type SchemaContract } from './schema-contract.js';
import { newSnapshotId } from './table-fields.js';
import { currentSnapshot, type PartitionSpec, type Snapshot, snapshotOfRun, type TableMetadata } from './table-metadata.js';

/**
 * What every write mode's run shares (table-writer.ts's IcebergRun: replace, append;
 * overwrite-run.ts's OverwriteRun: partition, merge): the files it owns until its commit lands,
 * and the one catalog commit with its optimistic retries.
 *
 * Exactly once: the run id is in the snapshot's summary (`tilehouse.run-id`), so a run that finds
 * its id on the snapshots `main` reaches commits nothing. A conflict (another writer's snapshot
 * landed first) re-reads the table, checks the run id again, checks the table still fits the run's
 * files (their field ids, its layout) and builds the snapshot again on the new parent, within
 * `maxCommitTries`; a lost answer is judged by reading the table. The run's schema (the table's,
 * or with `schema: add` a new one with the tile's new columns) is worked out again on each table
 * tried, and a new one goes in the same commit as the snapshot.
 */
export type Columns = readonly { name: string; type: ColumnType }[];

const DEFAULT_COMMIT_TRIES = 10;

/** What opening a run needs, whatever its mode (each mode's options add to it). */
export interface TableRunStart {
  catalog: IcebergCatalog;
  table: TableIdentifier;
  runId: string;
  /** The schema contract: `freeze` (absent) refuses any change of columns, `add` takes new ones as new fields. */
  schema?: SchemaContract;
  maxCommitTries?: number;
  /** Snapshot expiry and file cleanup (expire-snapshots.ts); DEFAULT_HOUSEKEEPING's values where not given. */
  housekeeping?: Partial<IcebergHousekeepingPolicy>;
  /** The clock of snapshot times and their expiry (a catalog refuses a snapshot ahead of its own clock). */
  now?: () => number;
  /** The clock a leftover file's age is read against (its modification time is the file system's): Date.now. */
  filesNow?: () => number;
  /** More of the run in the snapshot's summary (`tilehouse.*` keys: the window, when the run started, the definition). */
  summary?: Record<string, string>;
  /**
   * Where a table the catalog lacks is created, and created only by the commit (a failed run leaves
   * no empty table behind); absent: the catalog picks the location and the table is created as
   * the run opens.
   */
  newTableLocation?: string;
}

export interface IcebergRunResult {
  /** False when the table already held this run's snapshot: nothing was written. */
  committed: boolean;
  snapshotId: bigint;
  /** Rows of this run's data files (0 when not committed). */
  rows: number;
  /** Commits sent (conflicts included). */
  tries: number;
  metadataLocation: string;
  /** What the commit expired and the files deleted after it (absent when nothing was committed). */
  housekeeping?: HousekeepingReport;
  /** `schema: add`: the columns the commit added to the table as new fields (absent: none). */
  addedColumns?: string[];
}

/** The table a run writes, as it opens: the catalog's (created now unless the commit is to), or the one its commit creates. */
export interface OpenedTable {
  base: LoadedTable | undefined;
  /** The table already holds this run id's snapshot: the run writes nothing. */
  done: IcebergRunResult | undefined;
  /** The table's metadata, or the metadata of the table the commit creates (to check the run against). */
  metadata: TableMetadata;
  location: string;
}

/** Loads the table (creating it now when no `newTableLocation` defers that to the commit) and finds this run id's snapshot. */
export async function openTable(start: TableRunStart, columns: Columns, partitionSpec: PartitionSpec | undefined): Promise<OpenedTable> {
  const { catalog, table, runId } = start;
  const schema = newIcebergSchema(columns);
  let base = await catalog.loadTable(table);
  if (!base && start.newTableLocation === undefined) base = await catalog.createTable(table, schema, partitionSpec ? { partitionSpec } : {});
  const done = base && snapshotOfRun(base.metadata, runId);
  const metadata = base?.metadata ?? newTableMetadata(start.newTableLocation!, schema, partitionSpec);
  return { base, done: done ? notCommitted(done, base!, 0) : undefined, metadata, location: metadata.location };
}

function notCommitted(snapshot: Snapshot, table: LoadedTable, tries: number): IcebergRunResult {
  return { committed: false, snapshotId: snapshot['snapshot-id'], rows: 0, tries, metadataLocation: table.metadataLocation };
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

/** One try's snapshot and the files written for it (deleted when the catalog refuses it). */
export interface CommitAttempt {
  snapshot: NewSnapshot;
  files: string[];
}

/**
 * A run's files and its commit. A mode writes its files with `track` (each path owned before its
 * first byte), says how many rows it staged, and builds a try's snapshot on a parent; `commit` and
 * `discard` are this class's.
 */
export abstract class TableRun<Attempt extends CommitAttempt = CommitAttempt> {
  /** The files the run wrote and still owns: removed by `discard`, never once a commit referencing them may have landed. */
  protected readonly written: string[] = [];
  protected readonly snapshotId = newSnapshotId();
  protected readonly name: string;
  /** A commit was sent and what became of it is not known: the files may be the table's now. */
  private mayBeCommitted = false;
  private readonly policy: IcebergHousekeepingPolicy;

  protected constructor(
    protected readonly start: TableRunStart,
    /** The table's columns (the lineage columns too, for the modes that add them), as the run's files hold them. */
    protected readonly columns: Columns,
    /** The table as the run opened it; undefined: the catalog has none yet (the commit creates it). */
    private readonly base: LoadedTable | undefined,
    /** The run's snapshot when the table already holds it: nothing is written. */
    readonly done: IcebergRunResult | undefined,
    /** The table's location (or the one the commit creates it at). */
    readonly location: string,
    /** The schema the run's files are written with (their field ids). */
    protected readonly runSchema: RunSchema,
    /** The partition spec a table the commit creates gets. */
    private readonly partitionSpec: PartitionSpec | undefined,
  ) {
    this.name = tableName(start.table);
    this.policy = housekeepingPolicy(start.housekeeping);
  }

  /** The run's schema on the table as opened: refused (`iceberg_schema_mismatch`) as the contract says. */
  protected static schemaOf(start: TableRunStart, metadata: TableMetadata, columns: Columns): RunSchema {
    return runSchemaOn(tableName(start.table), metadata, columns, start.schema ?? 'freeze');
  }

  /** The rows the run staged; throws when `stage` has not run. */
  protected abstract stagedRows(): number;

  /** The snapshot of try `tries` on `base`'s current snapshot, its files written with `track`. */
  protected abstract attemptOn(base: LoadedTable, tries: number, schema: IcebergSchema): Promise<Attempt>;

  /** Throws when the table is not laid out as the run's files need (its partition spec). */
  protected abstract checkLayout(metadata: TableMetadata): void;

  /** Ends the rows being staged (the run is discarded). */
  protected abstract stopStaging(): Promise<void>;

  /** After the commit of `attempt` landed: what the mode tidies of its own (a merge's rewrites no try used). */
  protected async landed(_attempt: Attempt): Promise<void> {}

  /** `bytes` as a new file the run owns (owned before its first byte, so a failure removes it). */
  protected async track(path: string, bytes: Uint8Array[], attempt?: string[]): Promise<void> {
    this.written.push(path);
    attempt?.push(path);
    await writeNewFile(path, bytes);
  }

  /** The sequence number a snapshot on `base` takes. */
  protected sequenceOn(base: LoadedTable): bigint {
    return (base.metadata['last-sequence-number'] ?? 0n) + 1n;
  }

  /** The manifest list of a try (written, owned by the try) and the snapshot naming it, never before its parent in time. */
  protected async snapshotWith(
    base: LoadedTable,
    tries: number,
    entries: readonly ManifestListEntry[],
    summary: NewSnapshot['summary'],
    schema: IcebergSchema,
    files: string[],
  ): Promise<NewSnapshot> {
    const { snapshotId } = this;
    const parent = currentSnapshot(base.metadata);
    const sequenceNumber = this.sequenceOn(base);
    const listPath = childLocation(base.metadata.location, `metadata/snap-${snapshotId}-${tries}-${randomUUID()}.avro`);
    await this.track(listPath, [manifestList({ snapshotId, parentSnapshotId: parent?.['snapshot-id'], sequenceNumber, entries })], files);
    return {
      'snapshot-id': snapshotId,
      ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
      'sequence-number': sequenceNumber,
      // Never before the parent: readers order the snapshot log by time.
      'timestamp-ms': Math.max((this.start.now ?? Date.now)(), parent ? Number(parent['timestamp-ms']) + 1 : 0),
      'manifest-list': listPath,
      summary: { ...summary, ...this.start.summary },
      'schema-id': schema['schema-id'],
    };
  }

  /** The one catalog commit (after `stage`), with its optimistic retries; creates the table first when the catalog has none. */
  async commit(): Promise<IcebergRunResult> {
    const { catalog, table, runId } = this.start;
    const rows = this.stagedRows();
    let base =
      this.base ??
      (await catalog.loadTable(table)) ??
      (await catalog.createTable(table, newIcebergSchema(this.columns), {
        location: this.start.newTableLocation,
        ...(this.partitionSpec ? { partitionSpec: this.partitionSpec } : {}),
      }));
    const already = snapshotOfRun(base.metadata, runId);
    if (already) return notCommitted(already, base, 0);
    let schema = this.schemaOn(base);
    const maxTries = this.start.maxCommitTries ?? DEFAULT_COMMIT_TRIES;
    for (let tries = 1; tries <= maxTries; tries++) {
      const attempt = await this.attemptOn(base, tries, schema.schema);
      const added = schema.added.length === 0 ? {} : { addedColumns: schema.added.map((field) => field.name) };
      const evolution = schema.added.length === 0 ? undefined : { schema: schema.schema, lastColumnId: schema.lastColumnId };
      try {
        const committed = await commitWithExpiry(catalog, table, base, attempt.snapshot, this.policy, (this.start.now ?? Date.now)(), evolution);
        return { ...(await this.settled(base, committed, attempt, rows, tries)), ...added };
      } catch (error) {
        if (!(error instanceof CommitConflict) && !(error instanceof CommitOutcomeUnknown)) throw error;
        if (error instanceof CommitOutcomeUnknown) this.mayBeCommitted = true;
        const reread = await catalog.loadTable(table);
        if (!reread) throw new IcebergMetadataInvalidError(this.name, 'the table is gone from the catalog', { cause: error });
        // A lost answer to a commit that landed: the table holds this very snapshot.
        if (reread.metadata.snapshots?.some((candidate) => candidate['snapshot-id'] === this.snapshotId))
          return { ...(await this.settled(base, reread, attempt, rows, tries)), ...added };
        // The table, read again, does not hold it: whatever was lost did not land, and the metadata
        // file the lost commit would have made current (JDBC's) is no table's.
        this.mayBeCommitted = false;
        if (error instanceof CommitOutcomeUnknown && error.metadataLocation !== undefined) await removeLocation(error.metadataLocation);
        // Another process committed this run id meanwhile: it is published once, by it.
        const other = snapshotOfRun(reread.metadata, runId);
        if (other) return notCommitted(other, reread, tries);
        schema = this.schemaOn(reread);
        const tried = new Set(attempt.files);
        await Promise.all(attempt.files.map((path) => removeLocation(path)));
        this.written.splice(0, this.written.length, ...this.written.filter((path) => !tried.has(path)));
        base = reread;
      }
    }
    throw new IcebergCommitConflictError(this.name, maxTries);
  }

  /** The commit landed (`after` is the table with it): the run's files are the table's, and what the commit dropped goes. */
  private async settled(before: LoadedTable, after: LoadedTable, attempt: Attempt, rows: number, tries: number): Promise<IcebergRunResult> {
    // Referenced by the table now: never deleted as this run's own, whatever follows.
    this.written.length = 0;
    await this.landed(attempt);
    const housekeeping = await removeUnreferencedFiles({ before, after, policy: this.policy, nowMs: (this.start.filesNow ?? Date.now)() });
    return { committed: true, snapshotId: this.snapshotId, rows, tries, metadataLocation: after.metadataLocation, housekeeping };
  }

  /**
   * The run's schema on a table a commit is tried on, which must still take the run's files: another
   * writer may have created it meanwhile, or changed its schema (the same new column with the same
   * id is no change: two windows of one backfill add it alike).
   */
  private schemaOn(loaded: LoadedTable): RunSchema {
    const schema = TableRun.schemaOf(this.start, loaded.metadata, this.columns);
    const ids = schema.fieldIds;
    const ours = this.runSchema.fieldIds;
    if (ids.some((id, index) => id !== ours[index]))
      throw new IcebergSchemaMismatchError(
        this.name,
        `the table's field ids (${ids.join(', ')}) are not the ones this run's data files carry (${ours.join(', ')})`,
      );
    this.checkLayout(loaded.metadata);
    return schema;
  }

  /**
   * Removes what the run wrote, unless a commit's answer was lost and never settled (the files
   * may be the table's now: the run's re-run finds its snapshot or not). Idempotent.
   */
  async discard(): Promise<void> {
    await this.stopStaging();
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
