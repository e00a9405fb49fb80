import { describe, expect, it } from 'vitest';
import { mergeStatement, mergeTargetFilter } from '../../../src/sinks/bigquery/merge-statement.js';
import {
  firstKeptDay,
  partitionExpired,
  rangeOfDays,
  rangeOfPartitionIds,
  rangePredicate,
  stagingRangeQuery,
} from '../../../src/sinks/bigquery/partition-range.js';
import { hasPartitionPredicate, partitionFilterRefusal, readTables, startPartitionFilterProxy } from '../../support/bigquery-partition-filter-proxy.js';

const DAY = 86_400_000;

describe('the partition range of a run', () => {
  it('spans the first partition to the day after the last, by day and by month', () => {
    expect(rangeOfPartitionIds(['20240303', '20240301', '20240302'], { field: 'day', columnType: 'DATE' })).toEqual({
      column: 'day',
      columnType: 'DATE',
      from: '2024-03-01',
      until: '2024-03-04',
    });
    expect(rangeOfPartitionIds(['202412', '202402'], { field: 'day', columnType: 'DATE' })).toMatchObject({ from: '2024-02-01', until: '2025-01-01' });
    expect(rangeOfPartitionIds(['20241231'], { field: 'at', columnType: 'TIMESTAMP' })).toMatchObject({ from: '2024-12-31', until: '2025-01-01' });
    expect(rangeOfPartitionIds([], { field: 'day', columnType: 'DATE' })).toBeUndefined();
    expect(rangeOfDays('day', 'DATE', '2024-02-28', '2024-02-29')).toMatchObject({ from: '2024-02-28', until: '2024-03-01' });
  });

  it('is said with constants BigQuery can eliminate partitions by', () => {
    expect(rangePredicate({ column: 'day', columnType: 'DATE', from: '2024-03-01', until: '2024-03-04' }, 'T')).toBe(
      "T.`day` >= DATE '2024-03-01' AND T.`day` < DATE '2024-03-04'",
    );
    expect(rangePredicate({ column: 'at', columnType: 'TIMESTAMP', from: '2024-03-01', until: '2024-03-02' })).toBe(
      "`at` >= TIMESTAMP '2024-03-01 00:00:00+00' AND `at` < TIMESTAMP '2024-03-02 00:00:00+00'",
    );
    expect(stagingRangeQuery('p.d.staging', 'at', 'TIMESTAMP', '2024-01-01')).toBe(
      "SELECT CAST(MIN(DATE(`at`)) AS STRING) AS lo, CAST(MAX(DATE(`at`)) AS STRING) AS hi, COUNTIF(DATE(`at`) < DATE '2024-01-01') AS expired FROM `p.d.staging`",
    );
  });

  it("puts the range into the MERGE's ON condition on the target's side (the statement before and after)", () => {
    const fields = [
      { name: 'number', type: 'INT64' },
      { name: 'day', type: 'DATE' },
      { name: 'severity', type: 'STRING' },
    ];
    const before = mergeStatement('p.d.incidents', 'p.d.staging', fields, { columns: ['number'] });
    const after = mergeStatement('p.d.incidents', 'p.d.staging', fields, { columns: ['number', 'day'] }, rangePredicate(range, 'T'));
    expect(before.split('\n')[2]).toBe('ON T.`number` = S.`number`');
    expect(after.split('\n')[2]).toBe("ON T.`number` = S.`number` AND T.`day` = S.`day` AND T.`day` >= DATE '2024-03-01' AND T.`day` < DATE '2024-03-04'");
  });
});

const range = { column: 'day', columnType: 'DATE' as const, from: '2024-03-01', until: '2024-03-04' };

describe('mergeTargetFilter', () => {
  const typeOf = (column: string) => ({ day: 'DATE', at: 'TIMESTAMP', local: 'DATETIME' })[column];
  it('a key that does not include the partition column matches over the whole table: no filter where none is required', () => {
    expect(mergeTargetFilter({ columns: ['number'] }, { field: 'day', requireFilter: false }, range, typeOf)).toBeUndefined();
    expect(mergeTargetFilter({ columns: ['number'] }, undefined, undefined, typeOf)).toBeUndefined();
  });
  it('where a partition filter is required, one that covers every partition (NULL and out-of-range ones too)', () => {
    expect(mergeTargetFilter({ columns: ['number'] }, { field: 'day', requireFilter: true }, range, typeOf)).toBe(
      "(T.`day` IS NULL OR T.`day` >= DATE '0001-01-01')",
    );
    expect(mergeTargetFilter({ columns: ['number'] }, { field: 'at', requireFilter: true }, undefined, typeOf)).toBe(
      "(T.`at` IS NULL OR T.`at` >= TIMESTAMP '0001-01-01 00:00:00+00')",
    );
    expect(mergeTargetFilter({ columns: ['number'] }, { field: 'local', requireFilter: true }, undefined, typeOf)).toBe(
      "(T.`local` IS NULL OR T.`local` >= DATETIME '0001-01-01 00:00:00')",
    );
    // Ingestion time: no column to bound, the pseudo-column is (its streaming buffer is NULL).
    expect(mergeTargetFilter({ columns: ['number'] }, { field: undefined, requireFilter: true }, undefined, typeOf)).toBe(
      "(T._PARTITIONTIME IS NULL OR T._PARTITIONTIME >= TIMESTAMP '0001-01-01 00:00:00+00')",
    );
  });
  it("the partition column in the key (any case): the run's range, required or not", () => {
    const expected = "T.`day` >= DATE '2024-03-01' AND T.`day` < DATE '2024-03-04'";
    expect(mergeTargetFilter({ columns: ['number', 'Day'] }, { field: 'day', requireFilter: false }, range, typeOf)).toBe(expected);
    expect(mergeTargetFilter({ columns: ['number', 'day'] }, { field: 'day', requireFilter: true }, range, typeOf)).toBe(expected);
  });
});

describe('partition expiration', () => {
  const now = Date.parse('2026-11-26T10:00:00Z');
  it('a day partition expires at its end plus the expiration', () => {
    // 30 days: 2026-10-26 ends 2026-10-27T00:00Z, expires 2026-11-26T00:00Z (passed); 2026-10-27 at 2026-11-27.
    expect(partitionExpired('20261026', 30 * DAY, now)).toBe(true);
    expect(partitionExpired('20261027', 30 * DAY, now)).toBe(false);
    expect(firstKeptDay(30 * DAY, now)).toBe('2026-10-27');
    expect(partitionExpired('202609', 30 * DAY, now)).toBe(true);
    expect(partitionExpired('202610', 30 * DAY, now)).toBe(false);
  });
});

describe('the partition-filter proxy', () => {
  it('finds the tables a statement reads, not the one it inserts into', () => {
    expect(readTables('INSERT INTO `p.d.t` (a) SELECT a FROM `p.d.s`', 'p')).toEqual([{ table: 'p.d.s', qualifiers: ['s'] }]);
    expect(readTables('MERGE `p.d.t` T\nUSING `p.d.s` S\nON T.`n` = S.`n`', 'p')).toEqual([
      { table: 'p.d.t', qualifiers: ['t'] },
      { table: 'p.d.s', qualifiers: ['s'] },
    ]);
    expect(readTables('SELECT COUNT(*) FROM `d.t` WHERE x = 1', 'p')).toEqual([{ table: 'p.d.t', qualifiers: ['t'] }]);
  });

  it('takes a comparison of the partition column with constants as a filter, not one with another column', () => {
    expect(
      hasPartitionPredicate("MERGE `p.d.t` T USING `p.d.s` S ON T.n = S.n AND T.`day` >= DATE '2024-03-01' AND T.`day` < DATE '2024-03-02'", 'day', ['t']),
    ).toBe(true);
    expect(hasPartitionPredicate('MERGE `p.d.t` T USING `p.d.s` S ON T.n = S.n AND T.day = S.day', 'day', ['t'])).toBe(false);
    expect(hasPartitionPredicate('MERGE `p.d.t` T USING `p.d.s` S ON T.n = S.n AND S.day = DATE "x"', 'day', ['t'])).toBe(false);
    expect(hasPartitionPredicate("SELECT 1 FROM `p.d.t` WHERE day BETWEEN '2024-01-01' AND '2024-01-31'", 'day', ['t'])).toBe(true);
    expect(hasPartitionPredicate('SELECT 1 FROM `p.d.t` WHERE day = @d', 'day', ['t'])).toBe(true);
    expect(hasPartitionPredicate('SELECT 1 FROM `p.d.t` WHERE weekday = @d', 'day', ['t'])).toBe(false);
    expect(hasPartitionPredicate('SELECT 1 FROM `p.d.t`', 'day', ['t'])).toBe(false);
  });

  it("answers with BigQuery's refusal", () => {
    expect(partitionFilterRefusal('p.d.t', ['day'])).toEqual({
      status: 400,
      body: {
        error: {
          code: 400,
          message: "Cannot query over table 'p.d.t' without a filter over column(s) 'day' that can be used for partition elimination",
          errors: [
            {
              message: "Cannot query over table 'p.d.t' without a filter over column(s) 'day' that can be used for partition elimination",
              domain: 'global',
              reason: 'invalidQuery',
              location: 'q',
              locationType: 'parameter',
            },
          ],
          status: 'INVALID_ARGUMENT',
        },
      },
    });
  });

  it('refuses a told table without reading its metadata, on jobs.query and on jobs.insert of a query job', async () => {
    // Nothing listens upstream: a refused statement is answered by the proxy alone.
    const proxy = await startPartitionFilterProxy('http://127.0.0.1:9', { tables: [{ table: 'p.d.t', column: 'day' }], readMetadata: false });
    try {
      const post = (path: string, body: unknown) =>
        fetch(`${proxy.apiEndpoint}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const viaQuery = await post('/bigquery/v2/projects/p/queries', { query: 'SELECT COUNT(*) FROM `d.t`' });
      const viaInsert = await post('/bigquery/v2/projects/p/jobs', { configuration: { query: { query: 'DELETE FROM `p.d.t` WHERE n = 1' } } });
      for (const answer of [viaQuery, viaInsert]) {
        expect(answer.status).toBe(400);
        expect(await answer.json()).toEqual(partitionFilterRefusal('p.d.t', ['day']).body);
      }
      expect(proxy.refusals.map((refusal) => refusal.call)).toEqual(['jobs.query', 'jobs.insert']);
    } finally {
      await proxy.close();
    }
  });
});
