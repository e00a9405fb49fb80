import type { CommitHousekeeping, IcebergCatalog, LoadedTable, NewSnapshot, TableIdentifier } from './catalog.js';
import type { TableMetadata } from './table-metadata.js';

/**
 * Snapshot expiry, folded into the run's own commit: the commit that adds a run's snapshot also
 * removes the snapshots the policy no longer keeps (REST: a `remove-snapshots` update beside
 * `add-snapshot`, under the same `assert-ref-snapshot-id`; JDBC: the metadata file this writer
 * writes simply lacks them), so expiry needs no second commit, cannot race the run's own, and is
 * recomputed on every try of the commit from the table as re-read. The files only the expired
 * snapshots referenced are deleted after that commit is known to have landed (orphan-files.ts).
 *
 * The policy follows Iceberg's own `history.expire.*` rule: walking `main` back from the new
 * snapshot, a snapshot is kept while it is one of the newest `keepSnapshots`
 * (`min-snapshots-to-keep`) or younger than `maxSnapshotAgeDays` (`max-snapshot-age-ms`); the
 * first that is neither ends the walk and it and every older ancestor expire. A snapshot another
 * branch or a tag points at is kept with its ancestors (tilehouse makes none; someone else's are
 * theirs); a snapshot no ref reaches is kept while younger than the age. Iceberg's defaults
 * (1 snapshot, 5 days) keep 5 snapshots of a nightly table; tilehouse keeps at least 10 and 5
 * days, so a nightly table has ten nights of time travel (a long weekend's runs and the week
 * before them) and the exactly-once check (`snapshotOfRun`) knows every run id of the last 5 days
 * and of the last 10 runs. A re-run of an older run id is not known and would commit again: run ids
 * are retried within hours by an orchestrator, and `backfill --resume` re-runs only windows that
 * never committed.
 *
 * Metadata files: the commit also sets the table properties `write.metadata.previous-versions-max`
 * (`previousMetadataVersions`, 10) and `write.metadata.delete-after-commit.enabled` (true), so the
 * metadata log, and the metadata files kept, stay bounded for every writer of the table (the REST
 * server trims the log and deletes the files itself; the JDBC commit trims it here, and the files
 * it drops are deleted after the commit).
 */
export interface IcebergHousekeepingPolicy {
  /** The newest snapshots of `main` that are always kept (≥ 1). */
  keepSnapshots: number;
  /** Snapshots younger than this are kept whatever their number. */
  maxSnapshotAgeDays: number;
  /** Previous metadata files kept in the metadata log (`write.metadata.previous-versions-max`). */
  previousMetadataVersions: number;
  /**
   * A file in the table's `data/` or `metadata/` that no kept snapshot or metadata file references
   * (left by a failed or killed run) is deleted once it is older than this: longer than any run,
   * so another writer's files, written but not yet committed, are never taken.
   */
  orphanMinAgeHours: number;
}

export const DEFAULT_HOUSEKEEPING: IcebergHousekeepingPolicy = {
  keepSnapshots: 10,
  maxSnapshotAgeDays: 5,
  previousMetadataVersions: 10,
  // Iceberg's own `remove_orphan_files` default (older_than 3 days): far beyond the longest run.
  orphanMinAgeHours: 72,
};

/** No housekeeping at all: every snapshot and every file kept (the writer before housekeeping; the baseline of the simulated year). */
export const HOUSEKEEPING_OFF: IcebergHousekeepingPolicy = {
  keepSnapshots: Number.POSITIVE_INFINITY,
  maxSnapshotAgeDays: Number.POSITIVE_INFINITY,
  previousMetadataVersions: Number.POSITIVE_INFINITY,
  orphanMinAgeHours: Number.POSITIVE_INFINITY,
};

export const PREVIOUS_VERSIONS_MAX = 'write.metadata.previous-versions-max';
export const DELETE_AFTER_COMMIT = 'write.metadata.delete-after-commit.enabled';
/** Iceberg's default of `write.metadata.previous-versions-max`. */
const ICEBERG_PREVIOUS_VERSIONS_MAX = 100;

const DAY_MS = 86_400_000;

export function housekeepingPolicy(overrides: Partial<IcebergHousekeepingPolicy> | undefined): IcebergHousekeepingPolicy {
  const policy = { ...DEFAULT_HOUSEKEEPING, ...overrides };
  // A bug guard: the sink's config schema refuses these with the file and field.
  if (!(policy.keepSnapshots >= 1)) throw new RangeError(`keepSnapshots must be at least 1 (the current snapshot), not ${policy.keepSnapshots}`);
  if (!(policy.maxSnapshotAgeDays >= 0) || !(policy.previousMetadataVersions >= 0) || !(policy.orphanMinAgeHours >= 0))
    throw new RangeError('maxSnapshotAgeDays, previousMetadataVersions and orphanMinAgeHours must not be negative');
  return policy;
}

/** The ids of the snapshots of `base` that expire once `added` is `main`'s new head, at `nowMs`. */
export function snapshotsToExpire(base: TableMetadata, added: NewSnapshot, policy: IcebergHousekeepingPolicy, nowMs: number): bigint[] {
  const snapshots = base.snapshots ?? [];
  if (snapshots.length === 0 || policy.keepSnapshots === Number.POSITIVE_INFINITY) return [];
  const oldestKept = nowMs - policy.maxSnapshotAgeDays * DAY_MS;
  const byId = new Map(snapshots.map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  const parentOf = (id: bigint | null | undefined) => (id === undefined || id === null ? undefined : byId.get(id));
  const kept = new Set<bigint>();

  // main, from the new head back: the newest keepSnapshots, and any younger than the age.
  let count = 1; // the new snapshot itself
  for (let snapshot = parentOf(added['parent-snapshot-id']); snapshot !== undefined; snapshot = parentOf(snapshot['parent-snapshot-id'])) {
    if (count >= policy.keepSnapshots && Number(snapshot['timestamp-ms']) < oldestKept) break;
    kept.add(snapshot['snapshot-id']);
    count++;
  }
  // Every other ref's snapshot and its ancestors: someone else's history, never ours to cut.
  for (const [name, ref] of Object.entries(base.refs ?? {})) {
    if (name === 'main') continue;
    for (let snapshot = byId.get(ref['snapshot-id']); snapshot !== undefined && !kept.has(snapshot['snapshot-id']); )
      kept.add(snapshot['snapshot-id']), (snapshot = parentOf(snapshot['parent-snapshot-id']));
  }
  return snapshots
    .filter((snapshot) => !kept.has(snapshot['snapshot-id']))
    .filter((snapshot) => onMainOf(base, snapshot['snapshot-id'], byId) || Number(snapshot['timestamp-ms']) < oldestKept)
    .map((snapshot) => snapshot['snapshot-id']);
}

/** Whether `id` is an ancestor of (or is) `main`'s current snapshot in `base`. */
function onMainOf(base: TableMetadata, id: bigint, byId: Map<bigint, NonNullable<TableMetadata['snapshots']>[number]>): boolean {
  const head = base.refs?.main?.['snapshot-id'] ?? base['current-snapshot-id'];
  for (let snapshot = head === undefined || head === null ? undefined : byId.get(head); snapshot !== undefined; ) {
    if (snapshot['snapshot-id'] === id) return true;
    const parent = snapshot['parent-snapshot-id'];
    snapshot = parent === undefined || parent === null ? undefined : byId.get(parent);
  }
  return false;
}

/** What the run's commit carries beside its snapshot: the snapshots to remove and the metadata properties the policy sets. */
export function commitHousekeeping(base: TableMetadata, added: NewSnapshot, policy: IcebergHousekeepingPolicy, nowMs: number): CommitHousekeeping {
  const properties = propertiesOf(base);
  const wanted: Record<string, string> =
    policy.previousMetadataVersions === Number.POSITIVE_INFINITY
      ? {}
      : { [PREVIOUS_VERSIONS_MAX]: String(policy.previousMetadataVersions), [DELETE_AFTER_COMMIT]: 'true' };
  const setProperties = Object.fromEntries(Object.entries(wanted).filter(([key, value]) => properties[key] !== value));
  return { removeSnapshotIds: snapshotsToExpire(base, added, policy, nowMs), setProperties };
}

/**
 * The run's commit with the policy's expiry folded in (and the run's new schema, when it adds
 * columns): the one call the writer makes instead of `catalog.commitSnapshot`.
 */
export function commitWithExpiry(
  catalog: IcebergCatalog,
  table: TableIdentifier,
  base: LoadedTable,
  snapshot: NewSnapshot,
  policy: IcebergHousekeepingPolicy,
  nowMs: number,
  schema?: CommitHousekeeping['schema'],
): Promise<LoadedTable> {
  const housekeeping = commitHousekeeping(base.metadata, snapshot, policy, nowMs);
  return catalog.commitSnapshot(table, base, snapshot, schema === undefined ? housekeeping : { ...housekeeping, schema });
}

export function propertiesOf(metadata: TableMetadata): Record<string, string> {
  return ((metadata as { properties?: Record<string, string> }).properties ?? {}) as Record<string, string>;
}

/**
 * For a catalog whose metadata file this writer writes (JDBC): `next` (the base's metadata with the
 * new snapshot added and the base's file appended to its metadata log) with the housekeeping
 * applied as Iceberg's `TableMetadata.Builder` applies `remove-snapshots` and `set-properties`:
 * the snapshots removed, the snapshot log cut after the last entry of a removed snapshot, their
 * statistics dropped, and the metadata log trimmed to `write.metadata.previous-versions-max`.
 */
export function withHousekeeping<T extends Record<string, unknown>>(next: T, housekeeping: CommitHousekeeping | undefined): T {
  const removed = new Set(housekeeping?.removeSnapshotIds ?? []);
  const properties = { ...(next.properties as Record<string, string> | undefined), ...housekeeping?.setProperties };
  const idOf = (entry: unknown) => BigInt((entry as { 'snapshot-id': bigint | number })['snapshot-id']);
  const snapshotLog = (next['snapshot-log'] as unknown[] | undefined) ?? [];
  const lastRemoved = snapshotLog.findLastIndex((entry) => removed.has(idOf(entry)));
  const maxPrevious = Number(properties[PREVIOUS_VERSIONS_MAX] ?? ICEBERG_PREVIOUS_VERSIONS_MAX);
  const metadataLog = (next['metadata-log'] as unknown[] | undefined) ?? [];
  const statistics = (key: string) => ((next[key] as unknown[] | undefined) ?? []).filter((entry) => !removed.has(idOf(entry)));
  return {
    ...next,
    properties,
    snapshots: ((next.snapshots as unknown[] | undefined) ?? []).filter((snapshot) => !removed.has(idOf(snapshot))),
    'snapshot-log': snapshotLog.slice(lastRemoved + 1),
    'metadata-log': Number.isFinite(maxPrevious) ? metadataLog.slice(Math.max(0, metadataLog.length - maxPrevious)) : metadataLog,
    statistics: statistics('statistics'),
    'partition-statistics': statistics('partition-statistics'),
  };
}
