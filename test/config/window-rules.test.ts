import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { jobSchema } from '../../src/config/job-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { findItemIndex, windowItemProblems, writesOneFilePerWindow } from '../../src/config/window-rules.js';
import { backfillItemIndex } from '../../src/pipeline/windows/run-windows.js';

const items = [
  { header: 'Number', dataType: 'number' },
  { header: 'day', dataType: 'text' },
  { header: 'Day', ref: 'day', dataType: 'datetime' },
  { header: 'Hidden day', dataType: 'datetime', hidden: true },
];

describe('findItemIndex', () => {
  it('finds by ref first, even when another item has that header', () => {
    expect(findItemIndex({ items }, 'day')).toBe(2);
  });

  it('falls back to the header, and answers -1 for neither', () => {
    expect(findItemIndex({ items }, 'Day')).toBe(2);
    expect(findItemIndex({ items }, 'Number')).toBe(0);
    expect(findItemIndex({ items }, 'nope')).toBe(-1);
    expect(findItemIndex({ items: [] }, 'day')).toBe(-1);
  });
});

describe('windowItemProblems', () => {
  it('accepts a datetime item by ref and a visible bucket column, which may be the item itself', () => {
    expect(windowItemProblems(items, 'day', 'Day', 'backfill')).toEqual([]);
    expect(windowItemProblems(items, 'Hidden day', undefined, 'incremental')).toEqual([]);
  });

  it('refuses an item no query item names, and one that is not a datetime, in the words of the job kind', () => {
    expect(windowItemProblems(items, 'nope', undefined, 'backfill')).toEqual([{ key: 'item', value: 'nope', message: 'no query item has this ref or header' }]);
    expect(windowItemProblems(items, 'Number', undefined, 'backfill')).toEqual([
      { key: 'item', value: 'Number', message: "the item's dataType is number; rw windows apply to datetime items" },
    ]);
    expect(windowItemProblems(items, 'Number', undefined, 'incremental')).toEqual([
      { key: 'item', value: 'Number', message: "the item's dataType is number; incremental day windows filter a datetime item with rw" },
    ]);
  });

  it('refuses a bucket column that is hidden or names a ref rather than a header, beside an item problem', () => {
    expect(windowItemProblems(items, 'Number', 'Hidden day', 'backfill').map((problem) => problem.key)).toEqual(['item', 'bucketColumn']);
    expect(windowItemProblems(items, 'day', 'nope', 'backfill')).toEqual([
      { key: 'bucketColumn', value: 'nope', message: 'no visible query item has this header' },
    ]);
  });
});

describe('writesOneFilePerWindow', () => {
  it('wants {date} anywhere in the path, and nothing like it', () => {
    expect(writesOneFilePerWindow('{name}/{date}.csv')).toBe(true);
    expect(writesOneFilePerWindow('gs://b/{date}/x.csv')).toBe(true);
    expect(writesOneFilePerWindow('{name}.csv')).toBe(false);
    expect(writesOneFilePerWindow('{Date}.csv')).toBe(false);
  });
});

/** The same query rule, asked by the job schema (incremental) and by a backfill before it starts. */
describe('one rule for both windowed jobs', () => {
  const query = {
    items: [
      { header: 'Number', formula: '[incident.number]', dataType: 'number', filters: [] },
      { header: 'Day', ref: 'day', formula: '[incident.created]', dataType: 'datetime', function: 'date', grouped: true, filters: [] },
      { header: 'Hidden', formula: '[incident.created]', dataType: 'datetime', hidden: true, filters: [] },
    ],
    options: { pageNumber: 0, itemsPerPage: 50 },
  };
  const sinks = [{ type: 'bigquery', table: 'incidents', writeMode: 'partition' }];
  const base = { name: 'daily', tile: 'tile-1', query, sinks };

  const incrementalProblems = (incremental: Record<string, unknown>) =>
    (jobSchema.safeParse({ ...base, incremental: { startFrom: '2026-07-01', ...incremental } }).error?.issues ?? []).map(
      (issue) => `${issue.path.join('.')}: ${issue.message}`,
    );
  const backfillProblems = (backfill: Record<string, unknown>) => {
    const job: LoadedJob = { ...jobSchema.parse({ ...base, backfill }), file: 'jobs/daily.yaml', timezone: 'UTC' };
    try {
      backfillItemIndex(job);
      return [];
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toMatchObject({ code: 'config_invalid' });
      return (error as ConfigError).problems.map((problem) => `${problem.field}: ${problem.message}`);
    }
  };

  it.each([
    [{ item: 'day', bucketColumn: 'Day' }, [], []],
    [
      { item: 'Number' },
      ["incremental.item: the item's dataType is number; incremental day windows filter a datetime item with rw"],
      ["backfill.item: the item's dataType is number; rw windows apply to datetime items"],
    ],
    [{ item: 'nope' }, ['incremental.item: no query item has this ref or header'], ['backfill.item: no query item has this ref or header']],
    [
      { item: 'day', bucketColumn: 'Hidden' },
      ['incremental.bucketColumn: no visible query item has this header'],
      ['backfill.bucketColumn: no visible query item has this header'],
    ],
  ])('%j', (settings, incremental, backfill) => {
    expect(incrementalProblems(settings)).toEqual(incremental);
    expect(backfillProblems(settings)).toEqual(backfill);
  });

  it("reports an incremental job's item at the backfill: section it defaults to", () => {
    const problems = (
      jobSchema.safeParse({ ...base, backfill: { item: 'Number', bucketColumn: 'Hidden' }, incremental: { startFrom: '2026-07-01' } }).error?.issues ?? []
    ).map((issue) => issue.path.join('.'));
    expect(problems).toEqual(['backfill.item', 'backfill.bucketColumn']);
  });
});
