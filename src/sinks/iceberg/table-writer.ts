import { randomUUID } from 'node:crypto';
import type { ColumnType } from '../../value-types/column-types.js';
import type { TypedRow } from '../../transform/column.js';
import { ParquetEncoder } from '../parquet/encoder/parquet-encoder.js';
import { CommitOutcomeUnknown, type IcebergCatalog, type NewSnapshot, type TableIdentifier, tableName } from './catalog.js';
import { CommitConflict, IcebergCommitConflictError, IcebergMetadataInvalidError } from './iceberg-errors.js';
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
  maxCommitTries?: number;
  /** Snapshot expiry and file cleanup (expire-snapshots.ts); DEFAULT_HOUSEKEEPING's values where not given. */
  housekeeping?: Partial<IcebergHousekeepingPolicy>;
  /** The clock of snapshot times and their expiry (a catalog refuses a snapshot ahead of its own clock). */
  now?: () => number;
  /** The clock a leftover file's age is read against (its modification time is the file system's): Date.now. */
  filesNow?: () => number;
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

export async function writeIcebergRun(options: IcebergRunOptions): Promise<IcebergRunResult> {
  const { catalog, table, mode, runId } = options;
  const name = tableName(table);
  const now = options.now ?? Date.now;
  const policy = housekeepingPolicy(options.housekeeping);
  const lineage = mode === 'append' || mode === 'merge';
  const columns = lineage ? [...options.columns, ...LINEAGE_COLUMNS] : [...options.columns];
  if (mode === 'partition' || mode === 'merge') return writeOverwritingRun({ ...options, mode }, columns);
  let base = (await catalog.loadTable(table)) ?? (await catalog.createTable(table, newIcebergSchema(columns)));
  const done = snapshotOfRun(base.metadata, runId);
  if (done) return { committed: false, snapshotId: done['snapshot-id'], rows: 0, tries: 0, metadataLocation: base.metadataLocation };
  refusePartitioned(name, base.metadata, mode);
  const fieldIds = fieldIdsOf(name, base.metadata, columns);

  const location = base.metadata.location;
  const snapshotId = newSnapshotId();
  const written: string[] = [];
  try {
    const dataPath = childLocation(location, `data/${runId.replaceAll(/[^\w.-]/g, '_')}-${randomUUID()}.parquet`);
    const extractedAt = options.extractedAtMs ?? now();
    const encoder = new ParquetEncoder(columns.map((column, index) => ({ name: column.name, type: column.type, fieldId: fieldIds[index]! })));
    written.push(dataPath);
    const size = await writeNewFile(dataPath, encodeRows(encoder, options.rows, mode === 'append' ? [runId, extractedAt] : []));
    const dataFile: AddedDataFile = { path: dataPath, recordCount: BigInt(encoder.rowCount), sizeInBytes: BigInt(size) };
    const manifestPath = childLocation(location, `metadata/${randomUUID()}-m0.avro`);
    const manifestBytes = manifestFile({ schema: currentSchema(base.metadata), snapshotId, files: [dataFile] });
    written.push(manifestPath);
    await writeNewFile(manifestPath, [manifestBytes]);

    const maxTries = options.maxCommitTries ?? DEFAULT_COMMIT_TRIES;
    for (let tries = 1; tries <= maxTries; tries++) {
      const parent = currentSnapshot(base.metadata);
      const sequenceNumber = (base.metadata['last-sequence-number'] ?? 0n) + 1n;
      const own = manifestListEntry({ path: manifestPath, length: manifestBytes.length, snapshotId, sequenceNumber, files: [dataFile] });
      const carried = mode === 'append' && parent ? readManifestList(await readLocation(parent['manifest-list']), parent['manifest-list']) : [];
      const listPath = childLocation(location, `metadata/snap-${snapshotId}-${tries}-${randomUUID()}.avro`);
      written.push(listPath);
      await writeNewFile(listPath, [manifestList({ snapshotId, parentSnapshotId: parent?.['snapshot-id'], sequenceNumber, entries: [...carried, own] })]);
      const snapshot: NewSnapshot = {
        'snapshot-id': snapshotId,
        ...(parent ? { 'parent-snapshot-id': parent['snapshot-id'] } : {}),
        'sequence-number': sequenceNumber,
        // Never before the parent: readers order the snapshot log by time.
        'timestamp-ms': Math.max(now(), parent ? Number(parent['timestamp-ms']) + 1 : 0),
        'manifest-list': listPath,
        summary: summaryOf(mode, runId, dataFile, parent?.summary),
        'schema-id': base.metadata['current-schema-id'],
      };
      try {
        const committed = await commitWithExpiry(catalog, table, base, snapshot, policy, now());
        written.length = 0;
        const housekeeping = await removeUnreferencedFiles({ before: base, after: committed, policy, nowMs: (options.filesNow ?? Date.now)() });
        return { committed: true, snapshotId, rows: Number(dataFile.recordCount), tries, metadataLocation: committed.metadataLocation, housekeeping };
      } catch (error) {
        if (!(error instanceof CommitConflict) && !(error instanceof CommitOutcomeUnknown)) throw error;
        const reread = await catalog.loadTable(table);
        if (!reread) throw new IcebergMetadataInvalidError(name, 'the table is gone from the catalog', { cause: error });
        // A lost answer to a commit that landed: the table holds this very snapshot.
        if (reread.metadata.snapshots?.some((candidate) => candidate['snapshot-id'] === snapshotId)) {
          written.length = 0;
          const housekeeping = await removeUnreferencedFiles({ before: base, after: reread, policy, nowMs: (options.filesNow ?? Date.now)() });
          return { committed: true, snapshotId, rows: Number(dataFile.recordCount), tries, metadataLocation: reread.metadataLocation, housekeeping };
        }
        // Another process committed this run id meanwhile: it is published once, by it.
        const other = snapshotOfRun(reread.metadata, runId);
        if (other) return { committed: false, snapshotId: other['snapshot-id'], rows: 0, tries, metadataLocation: reread.metadataLocation };
        fieldIdsOf(name, reread.metadata, columns);
        await removeLocation(written.pop()!);
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

async function* encodeRows(encoder: ParquetEncoder, rows: IcebergRunOptions['rows'], lineage: readonly (string | number)[]): AsyncGenerator<Uint8Array> {
  for await (const batch of rows) {
    const pieces = encoder.addRows(lineage.length === 0 ? batch : batch.map((row) => [...row, ...lineage]));
    yield* pieces;
  }
  yield* encoder.finish();
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
