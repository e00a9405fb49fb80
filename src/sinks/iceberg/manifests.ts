import { avroContainerFile } from './avro/avro-container.js';
import type { AvroValue } from './avro/avro-encoder.js';
import { readAvroContainer } from './avro/avro-reader.js';
import type { AvroRecord, AvroSchema } from './avro/avro-schema.js';
import type { DataFileMetrics } from './column-metrics.js';
import { stringifyIcebergJson } from './iceberg-json.js';
import type { IcebergSchema } from './iceberg-schema.js';
import { partitionRecordSchema } from './partition-spec.js';
import type { PartitionSpec } from './table-metadata.js';

/**
 * Iceberg's manifests and manifest lists (the specification's "Manifests" and "Manifest Lists",
 * format version 2) as Avro files, with the field ids the specification gives each field: readers
 * bind the fields by id. An unpartitioned table's entries carry an empty partition record.
 */

const optional = (type: AvroSchema): AvroSchema => ['null', type];

const UNPARTITIONED: PartitionSpec = { 'spec-id': 0, fields: [] };

/** The manifest entry's schema for a spec: `data_file.partition` is the spec's own record. */
function manifestEntrySchema(spec: PartitionSpec): AvroRecord {
  if (spec.fields.length === 0) return MANIFEST_ENTRY;
  return {
    ...MANIFEST_ENTRY,
    fields: MANIFEST_ENTRY.fields.map((field) =>
      field.name === 'data_file'
        ? {
            ...field,
            type: {
              ...DATA_FILE,
              fields: DATA_FILE.fields.map((inner) => (inner.name === 'partition' ? { ...inner, type: partitionRecordSchema(spec) } : inner)),
            },
          }
        : field,
    ),
  };
}

/** A map keyed by field id, as Iceberg writes one in Avro: an array of key/value records (logicalType map), each part with its field id. */
function fieldIdMap(name: string, keyId: number, value: 'long' | 'bytes', valueId: number): AvroSchema {
  return {
    type: 'array',
    items: {
      type: 'record',
      name,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: value, 'field-id': valueId },
      ],
    },
    logicalType: 'map',
  } as AvroSchema;
}

/** A metrics map as the Avro array of key/value records. */
function mapEntries<V extends bigint | Buffer>(map: ReadonlyMap<number, V> | undefined): AvroValue {
  if (map === undefined) return null;
  return [...map].sort(([a], [b]) => a - b).map(([key, value]) => ({ key, value }));
}

const DATA_FILE: AvroRecord = {
  type: 'record',
  name: 'r2',
  fields: [
    { name: 'content', type: 'int', 'field-id': 134, doc: 'Contents of the file: 0=data, 1=position deletes, 2=equality deletes' },
    { name: 'file_path', type: 'string', 'field-id': 100, doc: 'Location URI with FS scheme' },
    { name: 'file_format', type: 'string', 'field-id': 101, doc: 'File format name: avro, orc, or parquet' },
    { name: 'partition', type: { type: 'record', name: 'r102', fields: [] }, 'field-id': 102, doc: 'Partition data tuple, schema based on the partition spec' },
    { name: 'record_count', type: 'long', 'field-id': 103, doc: 'Number of records in the file' },
    { name: 'file_size_in_bytes', type: 'long', 'field-id': 104, doc: 'Total file size in bytes' },
    {
      name: 'value_counts',
      type: optional(fieldIdMap('k119_v120', 119, 'long', 120)),
      default: null,
      'field-id': 109,
      doc: 'Map of column id to total count, including null and NaN',
    },
    {
      name: 'null_value_counts',
      type: optional(fieldIdMap('k121_v122', 121, 'long', 122)),
      default: null,
      'field-id': 110,
      doc: 'Map of column id to null value count',
    },
    {
      name: 'lower_bounds',
      type: optional(fieldIdMap('k126_v127', 126, 'bytes', 127)),
      default: null,
      'field-id': 125,
      doc: 'Map of column id to lower bound',
    },
    {
      name: 'upper_bounds',
      type: optional(fieldIdMap('k129_v130', 129, 'bytes', 130)),
      default: null,
      'field-id': 128,
      doc: 'Map of column id to upper bound',
    },
    { name: 'key_metadata', type: optional('bytes'), default: null, 'field-id': 131, doc: 'Encryption key metadata blob' },
    { name: 'split_offsets', type: optional({ type: 'array', items: 'long', 'element-id': 133 }), default: null, 'field-id': 132, doc: 'Splittable offsets' },
    { name: 'sort_order_id', type: optional('int'), default: null, 'field-id': 140, doc: 'Sort order ID' },
  ],
};

const MANIFEST_ENTRY: AvroRecord = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    { name: 'snapshot_id', type: optional('long'), default: null, 'field-id': 1 },
    { name: 'sequence_number', type: optional('long'), default: null, 'field-id': 3 },
    { name: 'file_sequence_number', type: optional('long'), default: null, 'field-id': 4 },
    { name: 'data_file', type: DATA_FILE, 'field-id': 2 },
  ],
};

const MANIFEST_FILE: AvroRecord = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500, doc: 'Location URI with FS scheme' },
    { name: 'manifest_length', type: 'long', 'field-id': 501, doc: 'Total file size in bytes' },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502, doc: 'Spec ID used to write' },
    { name: 'content', type: 'int', 'field-id': 517, doc: 'Contents of the manifest: 0=data, 1=deletes' },
    { name: 'sequence_number', type: 'long', 'field-id': 515, doc: 'Sequence number when the manifest was added' },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516, doc: 'Lowest sequence number in the manifest' },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503, doc: 'Snapshot ID that added the manifest' },
    { name: 'added_files_count', type: 'int', 'field-id': 504, doc: 'Added entry count' },
    { name: 'existing_files_count', type: 'int', 'field-id': 505, doc: 'Existing entry count' },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506, doc: 'Deleted entry count' },
    { name: 'added_rows_count', type: 'long', 'field-id': 512, doc: 'Added rows count' },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513, doc: 'Existing rows count' },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514, doc: 'Deleted rows count' },
    {
      name: 'partitions',
      type: optional({
        type: 'array',
        items: {
          type: 'record',
          name: 'r508',
          fields: [
            { name: 'contains_null', type: 'boolean', 'field-id': 509 },
            { name: 'contains_nan', type: optional('boolean'), default: null, 'field-id': 518 },
            { name: 'lower_bound', type: optional('bytes'), default: null, 'field-id': 510 },
            { name: 'upper_bound', type: optional('bytes'), default: null, 'field-id': 511 },
          ],
        },
        'element-id': 508,
      }),
      default: null,
      'field-id': 507,
      doc: 'Summary for each partition',
    },
    { name: 'key_metadata', type: optional('bytes'), default: null, 'field-id': 519, doc: 'Encryption key metadata blob' },
  ],
};

/** One data file a snapshot adds. */
export interface AddedDataFile {
  path: string;
  recordCount: bigint;
  sizeInBytes: bigint;
  /** Its partition tuple, by partition field name (a partitioned table's). */
  partition?: Record<string, AvroValue>;
  /** Its columns' counts and bounds (column-metrics.ts); absent: the entry has none. */
  metrics?: DataFileMetrics;
}

/** A manifest of files one snapshot adds (status ADDED; sequence numbers inherited from the manifest list). */
export function manifestFile(options: { schema: IcebergSchema; snapshotId: bigint; files: readonly AddedDataFile[]; spec?: PartitionSpec }): Buffer {
  const spec = options.spec ?? UNPARTITIONED;
  const entries: AvroValue[] = options.files.map((file) => ({
    status: 1,
    snapshot_id: options.snapshotId,
    sequence_number: null,
    file_sequence_number: null,
    data_file: {
      content: 0,
      file_path: file.path,
      file_format: 'PARQUET',
      partition: file.partition ?? {},
      record_count: file.recordCount,
      file_size_in_bytes: file.sizeInBytes,
      value_counts: mapEntries(file.metrics?.valueCounts),
      null_value_counts: mapEntries(file.metrics?.nullValueCounts),
      lower_bounds: mapEntries(file.metrics?.lowerBounds),
      upper_bounds: mapEntries(file.metrics?.upperBounds),
      key_metadata: null,
      split_offsets: null,
      sort_order_id: null,
    },
  }));
  return avroContainerFile(manifestEntrySchema(spec), entries, {
    metadata: {
      schema: stringifyIcebergJson(options.schema),
      'schema-id': String(options.schema['schema-id']),
      'partition-spec': JSON.stringify(spec.fields),
      'partition-spec-id': String(spec['spec-id']),
      'format-version': '2',
      content: 'data',
    },
  });
}

/** An entry of a manifest list, as the Avro record is read or written (longs as bigint). */
export type ManifestListEntry = { [field: string]: AvroValue };

/** The entry for a manifest `manifestFile` wrote, committed at `sequenceNumber`. */
export function manifestListEntry(options: {
  path: string;
  length: number;
  snapshotId: bigint;
  sequenceNumber: bigint;
  files: readonly AddedDataFile[];
  /** A partitioned manifest's spec id and field summaries (partition-spec.ts). */
  specId?: number;
  partitions?: ManifestListEntry[];
}): ManifestListEntry {
  return {
    manifest_path: options.path,
    manifest_length: BigInt(options.length),
    partition_spec_id: options.specId ?? 0,
    content: 0,
    sequence_number: options.sequenceNumber,
    min_sequence_number: options.sequenceNumber,
    added_snapshot_id: options.snapshotId,
    added_files_count: options.files.length,
    existing_files_count: 0,
    deleted_files_count: 0,
    added_rows_count: options.files.reduce((sum, file) => sum + file.recordCount, 0n),
    existing_rows_count: 0n,
    deleted_rows_count: 0n,
    partitions: options.partitions ?? [],
    key_metadata: null,
  };
}

/** A snapshot's manifest list. */
export function manifestList(options: {
  snapshotId: bigint;
  parentSnapshotId: bigint | undefined;
  sequenceNumber: bigint;
  entries: readonly ManifestListEntry[];
}): Buffer {
  return avroContainerFile(MANIFEST_FILE, options.entries, {
    metadata: {
      'snapshot-id': options.snapshotId.toString(),
      'parent-snapshot-id': options.parentSnapshotId === undefined ? 'null' : options.parentSnapshotId.toString(),
      'sequence-number': options.sequenceNumber.toString(),
      'format-version': '2',
    },
  });
}

/**
 * The entries of a manifest list another writer may have written, carried into the next snapshot
 * as they are (an append keeps every manifest of its parent). Fields of this writer's schema are
 * taken by name; a v2 list has them all.
 */
export function readManifestList(bytes: Buffer, source: string): ManifestListEntry[] {
  const { records } = readAvroContainer(bytes, source);
  return records.map((record) => {
    const read = record as Record<string, AvroValue>;
    const entry: ManifestListEntry = {};
    for (const field of MANIFEST_FILE.fields) entry[field.name] = read[field.name] ?? null;
    // A v1 list (or a writer's older names) lacks some: the v2 defaults the spec gives.
    entry.content ??= 0;
    entry.sequence_number ??= 0n;
    entry.min_sequence_number ??= 0n;
    entry.added_files_count ??= (read.added_data_files_count as number | undefined) ?? 0;
    entry.existing_files_count ??= (read.existing_data_files_count as number | undefined) ?? 0;
    entry.deleted_files_count ??= (read.deleted_data_files_count as number | undefined) ?? 0;
    entry.added_rows_count ??= 0n;
    entry.existing_rows_count ??= 0n;
    entry.deleted_rows_count ??= 0n;
    return entry;
  });
}
