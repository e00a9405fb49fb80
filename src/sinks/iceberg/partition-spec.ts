import type { TypedValue } from '../../transform/column.js';
import { dayNumberOfCalendarDate, formatCivilDate, MS_PER_DAY } from '../../value-types/civil-date.js';
import type { ColumnType } from '../../value-types/column-types.js';
import type { AvroRecord } from './avro/avro-schema.js';
import { IcebergPartitionMismatchError, IcebergValueError } from './iceberg-errors.js';
import type { IcebergSchema } from './iceberg-schema.js';
import { currentSchema, type PartitionField, type PartitionSpec, type TableMetadata } from './table-metadata.js';

/**
 * `writeMode: partition`'s table layout: one `day` partition field on a DATE or TIMESTAMP column
 * (the specification's "Partition Transforms": days since 1970-01-01, for a timestamptz in UTC,
 * which is what a reader prunes by, so a TIMESTAMP column's days are UTC days whatever the job's
 * zone), partition field id 1000 as Java assigns the first one, named `<column>_day` as Java names it.
 */
export interface DayPartitionOptions {
  column: string;
  /**
   * Days the run replaces whether or not it has rows for them (`from` inclusive, `to` exclusive,
   * as the PostgreSQL sink's window): a row outside it is refused.
   */
  window?: { from: string; to: string };
}

export const FIRST_PARTITION_FIELD_ID = 1000;

/** The spec a new table is created with (field ids of `schema`, a new table's). */
export function daySpecOf(schema: IcebergSchema, column: string): PartitionSpec {
  const field = schema.fields.find((candidate) => candidate.name === column);
  if (!field) throw new Error(`partition column ${column} is not in the schema`);
  return { 'spec-id': 0, fields: [{ 'source-id': field.id, 'field-id': FIRST_PARTITION_FIELD_ID, name: `${column}_day`, transform: 'day' }] };
}

/** How a run maps its rows to days, checked against the table the catalog holds. */
export interface DayLayout {
  spec: PartitionSpec;
  field: PartitionField;
  /** The partition column's index in the run's columns. */
  index: number;
  type: 'DATE' | 'TIMESTAMP';
  window: { from: number; to: number } | undefined;
}

/** The table's default spec, which must be exactly `day(column)`: anything else is refused, never rewritten. */
export function dayLayoutOf(
  name: string,
  metadata: TableMetadata,
  columns: readonly { name: string; type: ColumnType }[],
  options: DayPartitionOptions,
): DayLayout {
  const index = columns.findIndex((column) => column.name === options.column);
  const type = columns[index]?.type;
  if (type !== 'DATE' && type !== 'TIMESTAMP')
    throw new IcebergPartitionMismatchError(
      name,
      `partition column ${JSON.stringify(options.column)} is ${type === undefined ? 'not a column of the tile' : `${type}, not DATE or TIMESTAMP`}`,
    );
  const specs = (metadata['partition-specs'] ?? []) as PartitionSpec[];
  const spec = specs.find((candidate) => candidate['spec-id'] === (metadata['default-spec-id'] ?? 0));
  const source = currentSchema(metadata).fields.find((field) => field.name === options.column);
  const field = spec?.fields[0];
  if (!spec || !source || spec.fields.length !== 1 || !field || field.transform !== 'day' || field['source-id'] !== source.id)
    throw new IcebergPartitionMismatchError(
      name,
      `the table is partitioned by ${describeSpec(spec, metadata)}, not day(${options.column}); writeMode partition writes only a table partitioned by day on its column`,
    );
  let window: DayLayout['window'];
  if (options.window) {
    const from = dayNumberOfCalendarDate(options.window.from);
    const to = dayNumberOfCalendarDate(options.window.to);
    if (from === undefined || to === undefined || to <= from)
      throw new IcebergPartitionMismatchError(name, `the window ${options.window.from}..${options.window.to} is not a range of days`);
    window = { from, to };
  }
  return { spec, field, index, type, window };
}

function describeSpec(spec: PartitionSpec | undefined, metadata: TableMetadata): string {
  if (!spec || spec.fields.length === 0) return 'nothing (unpartitioned)';
  const names = new Map(currentSchema(metadata).fields.map((field) => [field.id, field.name]));
  return spec.fields.map((field) => `${field.transform}(${names.get(field['source-id']) ?? `field ${field['source-id']}`})`).join(', ');
}

/**
 * The day of a row (days since 1970-01-01). A null has no day, so a later run could never replace
 * it: refused, as the PostgreSQL sink refuses it; so is a day outside the run's window.
 */
export function dayOfRow(layout: Pick<DayLayout, 'type' | 'window'>, column: string, value: TypedValue): number {
  if (value === null) throw new IcebergValueError(column, 'null', 'has no day, so writeMode: partition could not replace it on a later run');
  const day = layout.type === 'DATE' ? dayNumberOfCalendarDate(String(value)) : Math.floor(Number(value) / MS_PER_DAY);
  if (day === undefined || !Number.isSafeInteger(day)) throw new IcebergValueError(column, String(value), 'is not a day');
  if (layout.window && (day < layout.window.from || day >= layout.window.to))
    throw new IcebergValueError(
      column,
      formatCivilDate(day),
      `lies outside the run's window ${formatCivilDate(layout.window.from)}..${formatCivilDate(layout.window.to)}, whose days alone a partition publish replaces`,
    );
  return day;
}

/** The days a run replaces: its window's every day, else exactly the days it has rows for. */
export function replacedDays(layout: DayLayout, rowDays: Iterable<number>): Set<number> {
  const days = new Set(rowDays);
  if (layout.window) for (let day = layout.window.from; day < layout.window.to; day++) days.add(day);
  return days;
}

/** The Avro record of `data_file.partition` for this spec (a `day` result is a date: an int with logicalType date). */
export function partitionRecordSchema(spec: PartitionSpec): AvroRecord {
  return {
    type: 'record',
    name: 'r102',
    fields: spec.fields.map((field) => ({
      name: field.name,
      type: ['null', { type: 'int', logicalType: 'date' }],
      default: null,
      'field-id': field['field-id'],
    })),
  };
}

/** A date's single-value serialisation (the specification's Appendix D): 4-byte little-endian days. */
export function dayBound(day: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32LE(day, 0);
  return bytes;
}

/**
 * The other modes write unpartitioned manifests (`merge` would also have to split its rows by
 * partition): a partitioned table is refused, never given a manifest that contradicts its spec.
 */
export function refusePartitioned(name: string, metadata: TableMetadata, mode: string): void {
  const spec = metadata['partition-specs']?.find((candidate) => candidate['spec-id'] === (metadata['default-spec-id'] ?? 0));
  if (spec && spec.fields.length > 0)
    throw new IcebergPartitionMismatchError(
      name,
      `the table is partitioned by ${describeSpec(spec, metadata)}; writeMode ${mode} writes only an unpartitioned table`,
    );
}
