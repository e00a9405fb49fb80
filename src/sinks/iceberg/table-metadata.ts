import { z } from 'zod';
import type { IcebergSchema } from './iceberg-schema.js';

/**
 * The parts of an Iceberg table's metadata (format version 2) the writer reads, checked at the
 * edge (a REST catalog's answer, a metadata file); other members pass through untouched, so a
 * JDBC commit writes back what another writer put there. Longs are bigint (iceberg-json.ts).
 */
const long = z.union([z.bigint(), z.number().int()]).transform((value) => BigInt(value));

const fieldSchema = z.looseObject({ id: z.number().int(), name: z.string(), required: z.boolean(), type: z.unknown() });
const schemaSchema = z.looseObject({ type: z.literal('struct'), 'schema-id': z.number().int(), fields: z.array(fieldSchema) });

const snapshotSchema = z.looseObject({
  'snapshot-id': long,
  'parent-snapshot-id': long.nullish(),
  'sequence-number': long.optional(),
  'timestamp-ms': long,
  'manifest-list': z.string(),
  summary: z.looseObject({ operation: z.string() }).catchall(z.string()),
  'schema-id': z.number().int().optional(),
});

export const tableMetadataSchema = z.looseObject({
  'format-version': z.number().int(),
  'table-uuid': z.string(),
  location: z.string(),
  'last-sequence-number': long.optional(),
  'last-updated-ms': long,
  'last-column-id': z.number().int(),
  'current-schema-id': z.number().int(),
  schemas: z.array(schemaSchema),
  'current-snapshot-id': long.nullish(),
  'default-spec-id': z.number().int().optional(),
  'partition-specs': z
    .array(
      z.looseObject({
        'spec-id': z.number().int(),
        fields: z.array(z.looseObject({ 'source-id': z.number().int(), 'field-id': z.number().int(), name: z.string(), transform: z.string() })),
      }),
    )
    .optional(),
  snapshots: z.array(snapshotSchema).optional(),
  refs: z.record(z.string(), z.looseObject({ 'snapshot-id': long, type: z.string() })).optional(),
  'snapshot-log': z.array(z.looseObject({ 'snapshot-id': long, 'timestamp-ms': long })).optional(),
  'metadata-log': z.array(z.looseObject({ 'metadata-file': z.string(), 'timestamp-ms': long })).optional(),
});

/** A partition field as table metadata and manifests carry it (partition-spec.ts makes and reads them). */
export interface PartitionField {
  'source-id': number;
  'field-id': number;
  name: string;
  transform: string;
}

export interface PartitionSpec {
  'spec-id': number;
  fields: PartitionField[];
}

export type TableMetadata = z.infer<typeof tableMetadataSchema>;
export type Snapshot = z.infer<typeof snapshotSchema>;

/** The snapshot `main` points at (the current one), or undefined for a table never committed to. */
export function currentSnapshot(metadata: TableMetadata): Snapshot | undefined {
  const id = metadata.refs?.main?.['snapshot-id'] ?? metadata['current-snapshot-id'];
  if (id === undefined || id === null || id === -1n) return undefined;
  return metadata.snapshots?.find((snapshot) => snapshot['snapshot-id'] === id);
}

/** The table's current schema. */
export function currentSchema(metadata: TableMetadata): IcebergSchema {
  const schema = metadata.schemas.find((candidate) => candidate['schema-id'] === metadata['current-schema-id']);
  if (!schema) throw new Error(`current-schema-id ${metadata['current-schema-id']} names no schema`);
  return schema as unknown as IcebergSchema;
}

/** The summary key holding the run id of the snapshot a run committed: the table's own ledger. */
export const RUN_ID_SUMMARY_KEY = 'tilehouse.run-id';

/** The snapshot a run committed, found by its run id in the summaries of the snapshots `main` reaches. */
export function snapshotOfRun(metadata: TableMetadata, runId: string): Snapshot | undefined {
  const byId = new Map((metadata.snapshots ?? []).map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  for (let snapshot = currentSnapshot(metadata); snapshot !== undefined; ) {
    if (snapshot.summary[RUN_ID_SUMMARY_KEY] === runId) return snapshot;
    const parent = snapshot['parent-snapshot-id'];
    snapshot = parent === undefined || parent === null ? undefined : byId.get(parent);
  }
  return undefined;
}
/** A new table's metadata (format version 2, unsorted, unpartitioned unless a spec is given), for a catalog the writer keeps itself (JDBC). */
export function newTableMetadata(options: {
  uuid: string;
  location: string;
  schema: IcebergSchema;
  nowMs: number;
  properties?: Record<string, string>;
  partitionSpec?: PartitionSpec;
}): Record<string, unknown> {
  const spec = options.partitionSpec ?? { 'spec-id': 0, fields: [] };
  return {
    'format-version': 2,
    'table-uuid': options.uuid,
    location: options.location,
    'last-sequence-number': 0,
    'last-updated-ms': options.nowMs,
    'last-column-id': Math.max(0, ...options.schema.fields.map((field) => field.id)),
    'current-schema-id': options.schema['schema-id'],
    schemas: [options.schema],
    'default-spec-id': 0,
    'partition-specs': [spec],
    'last-partition-id': Math.max(999, ...spec.fields.map((field) => field['field-id'])),
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { ...options.properties },
    'current-snapshot-id': null,
    refs: {},
    snapshots: [],
    statistics: [],
    'partition-statistics': [],
    'snapshot-log': [],
    'metadata-log': [],
  };
}
