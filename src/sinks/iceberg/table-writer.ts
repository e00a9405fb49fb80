import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import type { TypedRow } from '../../transform/column.js';
import { DataFileEncoder } from './data-file-encoder.js';
import { type LoadedTable, type NewSnapshot, tableName } from './catalog.js';
import { HandoffChannel } from './handoff-channel.js';
import type { IcebergSchema } from './iceberg-schema.js';
import { childLocation, readLocation, writeNewFile } from './local-files.js';
import { type AddedDataFile, manifestFile, manifestListEntry, readManifestList } from './manifests.js';
import { writeOverwritingRun } from './overwrite-run.js';
import { type DayPartitionOptions, refusePartitioned } from './partition-spec.js';
import { heldRunSchema, type RunSchema } from './schema-contract.js';
import { type CommitAttempt, type IcebergRunResult, type OpenedTable, openTable, TableRun, type TableRunStart } from './table-run.js';
import { currentSnapshot, RUN_ID_SUMMARY_KEY, type TableMetadata } from './table-metadata.js';

/**
 * One run into an Iceberg table: the rows as one Parquet data file (each column with its field
 * id), a manifest listing it, a manifest list, and one snapshot committed through the catalog's
 * optimistic commit. `replace` makes the run's file the whole table (an `overwrite` snapshot whose
 * manifest list holds only the new manifest); `append` keeps every manifest of the parent and adds
 * the lineage columns `_run_id` and `_extracted_at`.
 *
 * Exactly once, by the run id in the snapshot's summary, and the optimistic commit loop: table-run.ts.
 *
 * `partition` and `merge` overwrite part of the table (overwrite-run.ts): the days the run covers,
 * or the files holding its keys, recomputed on each parent a commit is tried on.
 */
export type IcebergWriteMode = 'replace' | 'append' | 'partition' | 'merge';

export interface IcebergRunOptions extends TableRunStart {
  columns: readonly { name: string; type: ColumnType }[];
  /** Batches of typed rows in the columns' order. */
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  mode: IcebergWriteMode;
  /** The instant of the run's extraction, for `_extracted_at` (append, merge). */
  extractedAtMs?: number;
  /** `partition`: the DATE or TIMESTAMP column the table is partitioned by day on, and the run's window. */
  partition?: DayPartitionOptions;
  /** `merge`: the key columns (one row per key in a run, none null). */
  mergeKey?: readonly string[];
  /** `merge`: of the run's rows sharing a key, the one with the highest value of this column stays. */
  latestBy?: string;
}

export type { IcebergRunResult } from './table-run.js';

/** The lineage columns an append adds, as the BigQuery and PostgreSQL sinks name them. */
export const LINEAGE_COLUMNS = [
  { name: '_run_id', type: 'STRING' },
  { name: '_extracted_at', type: 'TIMESTAMP' },
] as const;

/** What a run's phases need: the options of writeIcebergRun but its rows, which come by `writeRows`. */
export type IcebergRunStart = Omit<IcebergRunOptions, 'rows'>;

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
 * references exists before `commit` (table-run.ts's optimistic loop), whose snapshot lists the
 * run's manifest alone (`replace`) or after the parent's (`append`).
 */
export class IcebergRun extends TableRun {
  private readonly pieces = new HandoffChannel<Uint8Array>();
  private writing: Promise<number> | undefined;
  private encoder: DataFileEncoder | undefined;
  private dataFile: AddedDataFile | undefined;
  private manifest: { path: string; bytes: Uint8Array } | undefined;

  private constructor(
    private readonly options: IcebergRunStart,
    opened: OpenedTable,
    runSchema: RunSchema,
  ) {
    super(options, columnsOf(options), opened.base, opened.done, opened.location, runSchema, undefined);
  }

  static async open(options: IcebergRunStart): Promise<IcebergRun> {
    const columns = columnsOf(options);
    const opened = await openTable(options, columns, undefined);
    if (opened.done) return new IcebergRun(options, opened, heldRunSchema(opened.metadata));
    // replace and append write unpartitioned manifests: a day-partitioned table is partition's.
    refusePartitioned(tableName(options.table), opened.metadata, options.mode);
    return new IcebergRun(options, opened, TableRun.schemaOf(options, opened.metadata, columns));
  }

  /** Where the data file goes; its writing starts with the first batch. */
  private startWriting(): DataFileEncoder {
    if (this.encoder !== undefined) return this.encoder;
    const { fieldIds } = this.runSchema;
    this.encoder = new DataFileEncoder(this.columns.map((column, index) => ({ name: column.name, type: column.type, fieldId: fieldIds[index]! })));
    const dataPath = childLocation(this.location, `data/${this.options.runId.replaceAll(/[^\w.-]/g, '_')}-${randomUUID()}.parquet`);
    this.written.push(dataPath);
    this.writing = writeNewFile(dataPath, this.pieces);
    // Its failure is the next writeRows' or stage's; never an unhandled rejection meanwhile.
    this.writing.catch(() => undefined);
    return this.encoder;
  }

  private lineage(): readonly (string | number)[] {
    if (this.options.mode !== 'append') return [];
    return [this.options.runId, this.options.extractedAtMs ?? (this.options.now ?? Date.now)()];
  }

  async writeRows(batch: readonly TypedRow[]): Promise<void> {
    const encoder = this.startWriting();
    const lineage = this.lineage();
    const pieces = encoder.addRows(lineage.length === 0 ? batch : batch.map((row) => [...row, ...lineage]));
    await Promise.race([this.pieces.push(pieces), this.writing!.then(() => undefined)]);
  }

  /** Closes the data file and writes its manifest: everything but the commit. Returns the run's rows. */
  async stage(): Promise<number> {
    const encoder = this.startWriting();
    await Promise.race([this.pieces.push(encoder.finish()), this.writing!.then(() => undefined)]);
    this.pieces.end();
    const size = await this.writing!;
    const dataFile: AddedDataFile = {
      path: this.written[0]!,
      recordCount: BigInt(encoder.rowCount),
      sizeInBytes: BigInt(size),
      metrics: encoder.metrics(),
    };
    const manifestPath = childLocation(this.location, `metadata/${randomUUID()}-m0.avro`);
    const bytes = manifestFile({ schema: this.runSchema.schema, snapshotId: this.snapshotId, files: [dataFile] });
    await this.track(manifestPath, [bytes]);
    this.dataFile = dataFile;
    this.manifest = { path: manifestPath, bytes };
    return encoder.rowCount;
  }

  protected stagedRows(): number {
    if (!this.dataFile) throw new Error(`Iceberg table ${this.name}: commit before stage`);
    return Number(this.dataFile.recordCount);
  }

  protected async attemptOn(base: LoadedTable, tries: number, schema: IcebergSchema): Promise<CommitAttempt> {
    const { mode } = this.options;
    const dataFile = this.dataFile!;
    const manifest = this.manifest!;
    const { snapshotId } = this;
    const parent = currentSnapshot(base.metadata);
    const sequenceNumber = this.sequenceOn(base);
    const own = manifestListEntry({ path: manifest.path, length: manifest.bytes.length, snapshotId, sequenceNumber, files: [dataFile] });
    const carried = mode === 'append' && parent ? readManifestList(await readLocation(parent['manifest-list']), parent['manifest-list']) : [];
    const files: string[] = [];
    const summary = summaryOf(mode, this.options.runId, dataFile, parent?.summary);
    return { snapshot: await this.snapshotWith(base, tries, [...carried, own], summary, schema, files), files };
  }

  protected checkLayout(metadata: TableMetadata): void {
    refusePartitioned(this.name, metadata, this.options.mode);
  }

  protected async stopStaging(): Promise<void> {
    this.pieces.fail(new Error('the run was discarded'));
    await this.writing?.catch(() => undefined);
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
