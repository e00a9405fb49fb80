import { dayNumberOfCalendarDate, formatCivilDate } from '../../value-types/civil-date.js';
import type { TypedRow } from '../../transform/column.js';
import { readParentManifests } from './manifest-reading.js';
import { dayOfRow } from './partition-spec.js';
import { currentSnapshot, type PartitionSpec, type TableMetadata } from './table-metadata.js';

/**
 * What the publish guard compares a `partition` run with: the rows the table's current snapshot
 * holds in exactly the days the run replaces, summed from its manifests' data-file entries (the
 * `record_count` of each live file whose day partition is one of them); no data file is read. The
 * files an earlier run wrote, or a snapshot expired since, are the current snapshot's EXISTING
 * entries, so the sum is the table's whoever wrote them. With it, the snapshots that added those
 * files: the newest of them still in the table's history is the run that wrote those days.
 */
export type DaysHeld = { rows: number; addedBy: ReadonlySet<bigint> } | { unreadable: string };

export async function rowsInDays(table: string, metadata: TableMetadata, days: ReadonlySet<number>): Promise<DaysHeld> {
  const snapshot = currentSnapshot(metadata);
  if (snapshot === undefined || days.size === 0) return { rows: 0, addedBy: new Set() };
  const spec = (metadata['partition-specs'] as PartitionSpec[] | undefined)?.find((candidate) => candidate['spec-id'] === (metadata['default-spec-id'] ?? 0));
  const field = spec?.fields.length === 1 && spec.fields[0]!.transform === 'day' ? spec.fields[0]! : undefined;
  // A run would be refused such a table before its guard is asked (partition-spec.ts): said, never guessed.
  if (spec === undefined || field === undefined) return { unreadable: 'the table is not partitioned by one day field' };
  const { data, deletes } = await readParentManifests(table, snapshot);
  // Another writer's delete files take rows away that the data files' record counts still count.
  const live = deletes.find((entry) => Number(entry.added_files_count ?? 0) + Number(entry.existing_files_count ?? 0) > 0);
  if (live !== undefined) return { unreadable: `the table has delete files (${String(live.manifest_path)}), which record counts do not subtract` };
  let rows = 0n;
  const addedBy = new Set<bigint>();
  for (const manifest of data) {
    if (manifest.listEntry.partition_spec_id !== spec['spec-id'])
      return {
        unreadable: `manifest ${String(manifest.listEntry.manifest_path)} was written with partition spec ${String(manifest.listEntry.partition_spec_id)}, not the table's ${spec['spec-id']}`,
      };
    for (const { record, file } of manifest.entries) {
      if (!days.has(Number(file.partition[field.name]))) continue;
      rows += file.recordCount;
      addedBy.add(BigInt(record.snapshot_id as bigint));
    }
  }
  return { rows: Number(rows), addedBy };
}

/** The days, for the guard's `readFrom`: `day 2026-07-02`, `days 2026-07-01, 2026-07-03`, `days 2026-07-01..2026-07-31 (31)`. */
export function daysShown(days: ReadonlySet<number>): string {
  const sorted = [...days].sort((a, b) => a - b).map(formatCivilDate);
  if (sorted.length === 1) return `day ${sorted[0]}`;
  return sorted.length <= 3 ? `days ${sorted.join(', ')}` : `days ${sorted[0]}..${sorted.at(-1)} (${sorted.length})`;
}

/** A window's every day (`from` inclusive, `to` exclusive), which a `partition` run replaces whether or not it has rows for them. */
export function daysOfWindow(window: { from: string; to: string }): Set<number> {
  const from = dayNumberOfCalendarDate(window.from);
  const to = dayNumberOfCalendarDate(window.to);
  const days = new Set<number>();
  if (from !== undefined && to !== undefined) for (let day = from; day < to; day++) days.add(day);
  return days;
}

/**
 * The days a `partition` run of exactly these rows would replace (no window): each row's day of
 * the partition column, as the run's day files take it. For `plan` and `check`, which have every
 * row of a one-page tile; a row the run would refuse (no day) throws as the run would.
 */
export function daysOfRows(rows: readonly TypedRow[], partition: { column: string; index: number; type: 'DATE' | 'TIMESTAMP' }): Set<number> {
  const days = new Set<number>();
  for (const row of rows) days.add(dayOfRow({ type: partition.type, window: undefined }, partition.column, row[partition.index] ?? null));
  return days;
}
