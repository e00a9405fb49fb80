import { avroContainerFile } from './avro/avro-container.js';
import type { AvroValue } from './avro/avro-encoder.js';
import { readAvroContainer } from './avro/avro-reader.js';
import type { AvroSchema } from './avro/avro-schema.js';
import { IcebergMetadataInvalidError } from './iceberg-errors.js';
import { readLocation } from './local-files.js';
import { type ManifestListEntry, readManifestList } from './manifests.js';
import type { Snapshot } from './table-metadata.js';

/**
 * The parent snapshot's data files, read from its manifests (another writer's as well as ours), for
 * the modes that overwrite part of a table (`partition`, `merge`): which files are live, with the
 * sequence numbers and snapshot id each entry inherits from its manifest list entry (the
 * specification's "Sequence Number Inheritance"), and a manifest rewritten with some of its files
 * marked DELETED by a new snapshot (status 2) and the rest EXISTING (status 0), every inherited
 * value written out, since the rewritten manifest is added by another snapshot than theirs.
 */
const EXISTING = 0;
const ADDED = 1;
const DELETED = 2;

export interface LiveDataFile {
  path: string;
  recordCount: bigint;
  sizeInBytes: bigint;
  /** `data_file.partition` as the manifest holds it, by partition field name. */
  partition: Record<string, AvroValue>;
  /** `lower_bounds` and `upper_bounds` by field id (single-value serialization), when the writer of the entry wrote them. */
  lowerBounds: ReadonlyMap<number, Uint8Array>;
  upperBounds: ReadonlyMap<number, Uint8Array>;
}

export interface ParentManifest {
  listEntry: ManifestListEntry;
  /** The manifest's own Avro schema and header metadata: a rewrite keeps them (and every field another writer filled). */
  schema: AvroSchema;
  metadata: Record<string, string>;
  /** Live entries (ADDED or EXISTING), each with its inherited values written out. */
  entries: { record: Record<string, AvroValue>; file: LiveDataFile }[];
}

/** The manifests of `parent` (none for a table never committed to): data manifests read whole, delete manifests (another writer's) as listed. */
export async function readParentManifests(table: string, parent: Snapshot | undefined): Promise<{ data: ParentManifest[]; deletes: ManifestListEntry[] }> {
  if (!parent) return { data: [], deletes: [] };
  const list = readManifestList(await readLocation(parent['manifest-list']), parent['manifest-list']);
  const data = await Promise.all(list.filter((entry) => entry.content === 0).map((listEntry) => readManifest(table, listEntry)));
  return { data, deletes: list.filter((entry) => entry.content !== 0) };
}

async function readManifest(table: string, listEntry: ManifestListEntry): Promise<ParentManifest> {
  const path = String(listEntry.manifest_path);
  const { schema, metadata, records } = readAvroContainer(await readLocation(path), path);
  const entries: ParentManifest['entries'] = [];
  for (const read of records as Record<string, AvroValue>[]) {
    const status = Number(read.status);
    if (status === DELETED) continue;
    const dataFile = read.data_file as Record<string, AvroValue> | undefined;
    if (!dataFile || typeof dataFile.file_path !== 'string')
      throw new IcebergMetadataInvalidError(table, `manifest ${path} has an entry without data_file.file_path`);
    // Inheritance: a null snapshot id is the manifest's; a null sequence number of an ADDED entry is the manifest's.
    const inherited = status === ADDED ? (listEntry.sequence_number as bigint) : undefined;
    const record = {
      ...read,
      snapshot_id: read.snapshot_id ?? (listEntry.added_snapshot_id as bigint),
      sequence_number: read.sequence_number ?? inherited ?? null,
      file_sequence_number: read.file_sequence_number ?? inherited ?? null,
    };
    entries.push({
      record,
      file: {
        path: dataFile.file_path,
        recordCount: BigInt(dataFile.record_count as bigint),
        sizeInBytes: BigInt(dataFile.file_size_in_bytes as bigint),
        partition: (dataFile.partition ?? {}) as Record<string, AvroValue>,
        lowerBounds: boundsOf(dataFile.lower_bounds),
        upperBounds: boundsOf(dataFile.upper_bounds),
      },
    });
  }
  return { listEntry, schema, metadata, entries };
}

/** A bounds map as Iceberg's Avro holds it (an array of key/value records); empty when absent or of another shape. */
function boundsOf(value: AvroValue | undefined): Map<number, Uint8Array> {
  const bounds = new Map<number, Uint8Array>();
  if (!Array.isArray(value)) return bounds;
  for (const entry of value) {
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry) || entry instanceof Uint8Array || entry instanceof Map) continue;
    const { key, value: bound } = entry as Record<string, AvroValue>;
    if (typeof key === 'number' && bound instanceof Uint8Array) bounds.set(key, bound);
  }
  return bounds;
}

/** What a rewrite removed from the table: the files and their rows and bytes (for the snapshot summary). */
export interface Removed {
  files: number;
  records: bigint;
  bytes: bigint;
}

/**
 * `manifest` rewritten for the snapshot `snapshotId`: the files `removes` picks as DELETED by it,
 * the rest EXISTING; undefined when it picks none (the manifest is carried as it is). The list
 * entry's sequence number is the new snapshot's, given when the list is written.
 */
export function rewriteManifest(
  manifest: ParentManifest,
  snapshotId: bigint,
  removes: (file: LiveDataFile) => boolean,
): { bytes: Buffer; listEntry: (path: string, length: number, sequenceNumber: bigint) => ManifestListEntry; removed: Removed } | undefined {
  const removed: Removed = { files: 0, records: 0n, bytes: 0n };
  const kept: bigint[] = [];
  const records = manifest.entries.map(({ record, file }) => {
    if (!removes(file)) {
      kept.push(file.recordCount);
      return { ...record, status: EXISTING };
    }
    removed.files++;
    removed.records += file.recordCount;
    removed.bytes += file.sizeInBytes;
    return { ...record, status: DELETED, snapshot_id: snapshotId };
  });
  if (removed.files === 0) return undefined;
  const bytes = avroContainerFile(manifest.schema, records, { metadata: withoutAvroKeys(manifest.metadata) });
  const sequences = manifest.entries.map(({ record }) => record.sequence_number as bigint | null).filter((value) => value !== null);
  const listEntry = (path: string, length: number, sequenceNumber: bigint): ManifestListEntry => ({
    ...manifest.listEntry,
    manifest_path: path,
    manifest_length: BigInt(length),
    sequence_number: sequenceNumber,
    min_sequence_number: sequences.reduce((low, value) => (value < low ? value : low), sequenceNumber),
    added_snapshot_id: snapshotId,
    added_files_count: 0,
    existing_files_count: kept.length,
    deleted_files_count: removed.files,
    added_rows_count: 0n,
    existing_rows_count: kept.reduce((sum, value) => sum + value, 0n),
    deleted_rows_count: removed.records,
  });
  return { bytes, listEntry, removed };
}

function withoutAvroKeys(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).filter(([key]) => !key.startsWith('avro.')));
}
