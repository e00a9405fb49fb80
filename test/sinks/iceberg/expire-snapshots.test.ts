import { describe, expect, it } from 'vitest';
import type { NewSnapshot } from '../../../src/sinks/iceberg/catalog.js';
import { commitHousekeeping, DEFAULT_HOUSEKEEPING, snapshotsToExpire, withHousekeeping } from '../../../src/sinks/iceberg/expire-snapshots.js';
import type { TableMetadata } from '../../../src/sinks/iceberg/table-metadata.js';

const DAY_MS = 86_400_000;
const NOW = 1_800_000_000_000;

/** A table whose `main` is a chain of snapshots 1..count, snapshot i taken `count - i + 1` days before NOW (the newest a day old). */
function chain(count: number, extra: Partial<TableMetadata> = {}): TableMetadata {
  const snapshots = Array.from({ length: count }, (_, index) => ({
    'snapshot-id': BigInt(index + 1),
    'parent-snapshot-id': index === 0 ? null : BigInt(index),
    'timestamp-ms': BigInt(NOW - (count - index) * DAY_MS),
    'manifest-list': `file:///t/metadata/snap-${index + 1}.avro`,
    summary: { operation: 'overwrite' },
  }));
  return {
    'format-version': 2,
    'table-uuid': 'u',
    location: 'file:///t',
    'last-updated-ms': BigInt(NOW),
    'last-column-id': 1,
    'current-schema-id': 0,
    schemas: [],
    'current-snapshot-id': BigInt(count),
    snapshots,
    refs: { main: { 'snapshot-id': BigInt(count), type: 'branch' } },
    ...extra,
  } as TableMetadata;
}

const next = (parent: number): NewSnapshot => ({
  'snapshot-id': 1000n,
  'parent-snapshot-id': BigInt(parent),
  'sequence-number': 1n,
  'timestamp-ms': NOW,
  'manifest-list': 'file:///t/metadata/snap-1000.avro',
  summary: { operation: 'overwrite' },
  'schema-id': 0,
});

describe('snapshotsToExpire', () => {
  it('keeps the newest keepSnapshots (the new one counted) and expires every older ancestor past the age', () => {
    const expired = snapshotsToExpire(chain(30), next(30), { ...DEFAULT_HOUSEKEEPING, keepSnapshots: 10, maxSnapshotAgeDays: 5 }, NOW);
    expect(expired).toEqual(Array.from({ length: 21 }, (_, index) => BigInt(index + 1)));
  });

  it('keeps every snapshot younger than maxSnapshotAgeDays, however many', () => {
    const expired = snapshotsToExpire(chain(30), next(30), { ...DEFAULT_HOUSEKEEPING, keepSnapshots: 1, maxSnapshotAgeDays: 7.5 }, NOW);
    // Snapshots 24..30 are 7..1 days old: kept; 23 is 8 days old.
    expect(expired).toEqual(Array.from({ length: 23 }, (_, index) => BigInt(index + 1)));
  });

  it('keeps a tag’s snapshot with its ancestors, and a snapshot no ref reaches while it is young', () => {
    const table = chain(20);
    table.refs = { ...table.refs, audit: { 'snapshot-id': 4n, type: 'tag' } };
    table.snapshots = [
      ...(table.snapshots ?? []),
      { 'snapshot-id': 77n, 'parent-snapshot-id': 19n, 'timestamp-ms': BigInt(NOW - DAY_MS), 'manifest-list': 'x', summary: { operation: 'append' } },
      { 'snapshot-id': 78n, 'parent-snapshot-id': 2n, 'timestamp-ms': BigInt(NOW - 19 * DAY_MS), 'manifest-list': 'y', summary: { operation: 'append' } },
    ];
    const expired = snapshotsToExpire(table, next(20), { ...DEFAULT_HOUSEKEEPING, keepSnapshots: 3, maxSnapshotAgeDays: 1.5 }, NOW);
    expect(expired).toEqual([5n, 6n, 7n, 8n, 9n, 10n, 11n, 12n, 13n, 14n, 15n, 16n, 17n, 18n, 78n]);
  });

  it('sets the metadata properties only when the table lacks them', () => {
    const table = chain(2);
    expect(commitHousekeeping(table, next(2), DEFAULT_HOUSEKEEPING, NOW).setProperties).toEqual({
      'write.metadata.previous-versions-max': '10',
      'write.metadata.delete-after-commit.enabled': 'true',
    });
    const kept = chain(2, { properties: { 'write.metadata.previous-versions-max': '10', 'write.metadata.delete-after-commit.enabled': 'true' } } as never);
    expect(commitHousekeeping(kept, next(2), DEFAULT_HOUSEKEEPING, NOW).setProperties).toEqual({});
  });
});

describe('withHousekeeping', () => {
  it('drops the removed snapshots, cuts the snapshot log after the last removed one, trims the metadata log to previous-versions-max', () => {
    const metadata = {
      properties: { keep: 'me' },
      snapshots: [1n, 2n, 3n].map((id) => ({ 'snapshot-id': id })),
      'snapshot-log': [1n, 2n, 3n].map((id) => ({ 'snapshot-id': id, 'timestamp-ms': 0 })),
      'metadata-log': Array.from({ length: 12 }, (_, index) => ({ 'metadata-file': `m${index}`, 'timestamp-ms': index })),
      statistics: [{ 'snapshot-id': 1n, 'statistics-path': 's1' }],
    };
    const next = withHousekeeping(metadata, { removeSnapshotIds: [1n, 2n], setProperties: { 'write.metadata.previous-versions-max': '3' } });
    expect(next.snapshots).toEqual([{ 'snapshot-id': 3n }]);
    expect(next['snapshot-log']).toEqual([{ 'snapshot-id': 3n, 'timestamp-ms': 0 }]);
    expect(next['metadata-log'].map((entry) => entry['metadata-file'])).toEqual(['m9', 'm10', 'm11']);
    expect(next.statistics).toEqual([]);
    expect(next.properties).toEqual({ keep: 'me', 'write.metadata.previous-versions-max': '3' });
  });
});
