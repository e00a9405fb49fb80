import { describe, expect, it } from 'vitest';
import type { BigQuerySinkConfig } from '../../../src/config/job-schema.js';
import { partitionIdOf, reconcileLayout, resolveTableLayout, stagingTableOptions, targetTableOptions } from '../../../src/sinks/bigquery/table-layout.js';
import type { Column } from '../../../src/transform/column.js';

const columns: Column[] = [
  { name: 'day', header: 'Day', type: 'DATE', sourceDataType: 'datetime' },
  { name: 'opened_at', header: 'Opened at', type: 'TIMESTAMP', sourceDataType: 'datetime' },
  { name: 'severity', header: 'Severity', type: 'STRING', sourceDataType: 'text' },
  { name: 'share', header: 'Share', type: 'FLOAT64', sourceDataType: 'number' },
];
const where = { jobName: 'daily_severity', sink: 'bigquery ops.daily' };
const config = (overrides: Partial<BigQuerySinkConfig>): BigQuerySinkConfig => ({ type: 'bigquery', writeMode: 'replace', schema: 'freeze', ...overrides });

describe('resolveTableLayout', () => {
  it('finds the partition and cluster columns by output name or header, case-insensitively', () => {
    const layout = resolveTableLayout(
      config({
        partitionBy: { column: 'Opened at', granularity: 'month' },
        clusterBy: ['SEVERITY', 'day'],
        requirePartitionFilter: true,
        partitionExpirationDays: 1.5,
      }),
      columns,
      where,
    );
    expect(layout).toEqual({
      partition: { field: 'opened_at', columnIndex: 1, columnType: 'TIMESTAMP', type: 'MONTH' },
      clustering: ['severity', 'day'],
      requirePartitionFilter: true,
      partitionExpirationMs: '129600000',
    });
  });

  it('refuses a partition column the tile does not have, naming job, sink, field, value and the columns there are', () => {
    expect(() => resolveTableLayout(config({ partitionBy: { column: 'Created', granularity: 'day' } }), columns, where)).toThrow(
      expect.objectContaining({
        code: 'bigquery_partition_column_invalid',
        message: 'job daily_severity: sink bigquery ops.daily: partitionBy.column = "Created": no such column; columns: day, opened_at, severity, share',
      }),
    );
  });

  it('refuses a partition column that is not DATE or TIMESTAMP', () => {
    expect(() => resolveTableLayout(config({ partitionBy: { column: 'severity', granularity: 'day' } }), columns, where)).toThrow(
      expect.objectContaining({
        code: 'bigquery_partition_column_invalid',
        message: expect.stringContaining('column severity is STRING; partitioning needs a DATE or TIMESTAMP column'),
      }),
    );
  });

  it('refuses clustering by a FLOAT64 column or a missing one, naming its position', () => {
    expect(() => resolveTableLayout(config({ clusterBy: ['day', 'Share'] }), columns, where)).toThrow(
      expect.objectContaining({
        code: 'bigquery_cluster_column_invalid',
        message: expect.stringContaining('clusterBy[1] = "Share": column share is FLOAT64, which BigQuery cannot cluster by'),
        // What `validate` locates in the job file: the field's path and the reason alone.
        path: ['clusterBy', 1],
        value: 'Share',
        reason: 'column share is FLOAT64, which BigQuery cannot cluster by',
      }),
    );
    expect(() => resolveTableLayout(config({ clusterBy: ['team'] }), columns, where)).toThrow(
      expect.objectContaining({ code: 'bigquery_cluster_column_invalid' }),
    );
  });
});

describe('table options', () => {
  const layout = resolveTableLayout(
    config({ partitionBy: { column: 'day', granularity: 'day' }, clusterBy: ['severity'], requirePartitionFilter: true, partitionExpirationDays: 30 }),
    columns,
    where,
  );

  it('create the target partitioned on the column, with expiration, required filter and clustering', () => {
    expect(targetTableOptions(layout, 'replace')).toEqual({
      timePartitioning: { type: 'DAY', field: 'day', expirationMs: '2592000000' },
      requirePartitionFilter: true,
      clustering: { fields: ['severity'] },
    });
  });

  it('create the staging table partitioned and clustered alike, without expiration or required filter', () => {
    expect(stagingTableOptions(layout)).toEqual({ timePartitioning: { type: 'DAY', field: 'day' }, clustering: { fields: ['severity'] } });
  });

  it('keep ingestion-time DAY partitions in partition mode', () => {
    expect(targetTableOptions({}, 'partition')).toEqual({ timePartitioning: { type: 'DAY' } });
    expect(targetTableOptions({}, 'replace')).toEqual({});
  });
});

describe('partitionIdOf', () => {
  const day = { field: 'day', columnIndex: 0, columnType: 'DATE', type: 'DAY' } as const;
  const at = { field: 'opened_at', columnIndex: 1, columnType: 'TIMESTAMP', type: 'MONTH' } as const;

  it('is the decorator id of a DATE, by day or month', () => {
    expect(partitionIdOf('2024-02-29', day)).toEqual({ id: '20240229' });
    expect(partitionIdOf('2024-02-29', { ...day, type: 'MONTH' })).toEqual({ id: '202402' });
  });

  it('takes the UTC day of a TIMESTAMP, as BigQuery does', () => {
    expect(partitionIdOf(Date.parse('2024-03-31T23:30:00-02:00'), at)).toEqual({ id: '202404' });
    expect(partitionIdOf(Date.parse('2024-03-31T23:30:00Z'), { ...at, type: 'DAY' })).toEqual({ id: '20240331' });
  });

  it('has none for null and for days BigQuery leaves unpartitioned', () => {
    expect(partitionIdOf(null, day)).toEqual({ invalid: expect.stringContaining('__NULL__') });
    expect(partitionIdOf('1959-12-31', day)).toEqual({ invalid: expect.stringContaining('__UNPARTITIONED__') });
    expect(partitionIdOf('2160-01-01', day)).toEqual({ invalid: expect.stringContaining('__UNPARTITIONED__') });
    expect(partitionIdOf(Date.parse('1960-01-01T00:00:00Z'), at)).toEqual({ id: '196001' });
  });
});

describe('reconcileLayout', () => {
  const layout = resolveTableLayout(
    config({ partitionBy: { column: 'day', granularity: 'day' }, clusterBy: ['severity'], requirePartitionFilter: true, partitionExpirationDays: 30 }),
    columns,
    where,
  );
  const table = { jobName: 'daily_job', table: 'p.ops.daily' };

  it('refuses a table partitioned otherwise, or not at all', () => {
    expect(() => reconcileLayout({ timePartitioning: { type: 'MONTH', field: 'day' } }, layout, 'replace', table)).toThrow(
      expect.objectContaining({
        code: 'bigquery_table_layout_mismatch',
        message: expect.stringMatching(/^job daily_job: table p\.ops\.daily is MONTH on day, the job asks for DAY on day/),
      }),
    );
    expect(() => reconcileLayout({}, layout, 'replace', table)).toThrow(expect.objectContaining({ message: expect.stringContaining('is not partitioned') }));
    expect(() => reconcileLayout({ timePartitioning: { type: 'DAY', field: 'day' } }, {}, 'partition', table)).toThrow(
      expect.objectContaining({ code: 'bigquery_table_layout_mismatch' }),
    );
  });

  it('patches clustering, required filter and expiration that differ, keeping the partitioning as it is', () => {
    const result = reconcileLayout({ timePartitioning: { type: 'DAY', field: 'DAY' }, clustering: { fields: ['team'] } }, layout, 'replace', table);
    expect(result.patch).toEqual({
      clustering: { fields: ['severity'] },
      requirePartitionFilter: true,
      timePartitioning: { type: 'DAY', field: 'DAY', expirationMs: '2592000000' },
    });
    expect(result.changes).toEqual(['clustering team -> severity', 'requirePartitionFilter false -> true', 'partition expiration none -> 30 days']);
  });

  it('changes nothing when the table matches, and leaves options the job does not set as the table has them', () => {
    const matching = {
      timePartitioning: { type: 'DAY', field: 'day', expirationMs: '2592000000' },
      clustering: { fields: ['severity'] },
      requirePartitionFilter: true,
    };
    expect(reconcileLayout(matching, layout, 'replace', table)).toEqual({ patch: {}, changes: [] });
    const unmanaged = resolveTableLayout(config({ partitionBy: { column: 'day', granularity: 'day' } }), columns, where);
    expect(reconcileLayout({ ...matching, clustering: { fields: ['x'] }, requirePartitionFilter: false }, unmanaged, 'replace', table).changes).toEqual([]);
  });
});
