import { describe, expect, it } from 'vitest';
import { isTilehouseError } from '../../../src/errors.js';
import { findItemIndex, queryForWindow, WindowItemMissingError, type WindowSpan } from '../../../src/source/export-endpoint/index.js';
import { relativeWindowFor } from '../../../src/source/export-endpoint/window-query.js';
import { parseTimestamp } from '../../../src/transform/index.js';
import type { ExportQuery } from '../../../src/config/job-schema.js';

const DAY_MS = 86_400_000;

/** A window of calendar dates placed in `timezone`, as the backfill runner places it before asking for its query. */
function spanOf(from: string, to: string, timezone: string): WindowSpan {
  return { startMs: parseTimestamp(from, timezone) as number, endMs: parseTimestamp(to, timezone) as number };
}

/** [from days back, to days back] of the one rw filter of item `index`. */
function rwOf(query: ExportQuery, index: number): { values: string[]; beforeAggregate?: boolean | undefined } {
  const rw = query.items[index]!.filters.filter((filter) => filter.operator === 'rw');
  expect(rw).toHaveLength(1);
  return rw[0]!;
}

describe('relativeWindowFor', () => {
  const now = new Date('2026-07-01T10:00:00Z');
  it('covers the whole window in the job timezone, widened by one day each side', () => {
    const [n1, , n2] = relativeWindowFor(spanOf('2026-06-20', '2026-06-21', 'Europe/Berlin'), now);
    // Window [2026-06-19T22:00Z, 2026-06-20T22:00Z); now - n1 days must be before its start, now - n2 days after its end.
    const start = now.getTime() - Number(n1) * 86_400_000;
    const end = now.getTime() - Number(n2) * 86_400_000;
    expect(start).toBeLessThanOrEqual(Date.parse('2026-06-19T22:00:00Z') - 86_400_000);
    expect(end).toBeGreaterThanOrEqual(Date.parse('2026-06-20T22:00:00Z') + 86_400_000);
    expect(end - start).toBeLessThanOrEqual(4 * 86_400_000);
  });
  it('never reaches into the future', () => {
    expect(relativeWindowFor(spanOf('2026-06-30', '2026-07-02', 'UTC'), now)[2]).toBe('0');
  });
  it('reaches at least one day back for a window that starts after now (the source has not reached it)', () => {
    expect(relativeWindowFor(spanOf('2026-07-05', '2026-07-06', 'UTC'), now)).toEqual(['1', 'days', '0', 'days']);
  });
  it('counts whole days: a window ending exactly one day before now still ends its filter at 0 days back', () => {
    const span = { startMs: now.getTime() - 2 * DAY_MS, endMs: now.getTime() - DAY_MS };
    expect(relativeWindowFor(span, now)).toEqual(['3', 'days', '0', 'days']);
  });
});

describe('queryForWindow', () => {
  const query = {
    items: [
      {
        header: 'Day',
        ref: 'day',
        formula: '[incident.created]',
        dataType: 'datetime',
        filters: [
          { operator: 'rw', values: ['30', 'days', '0', 'days'] },
          { operator: 'gt', values: ['1'] },
        ],
      },
      { header: 'N', formula: '[incident.number]', dataType: 'number', filters: [] },
    ],
    options: {},
  } as ExportQuery;
  const now = new Date('2026-07-01T10:00:00Z');
  const window = spanOf('2026-06-20', '2026-06-21', 'UTC');

  it('replaces only the rw filter of the named item and keeps the rest', () => {
    const index = findItemIndex(query, 'day');
    const windowed = queryForWindow(query, index, window, now);
    expect(windowed.items[0]!.filters).toEqual([
      { operator: 'gt', values: ['1'] },
      { operator: 'rw', values: ['13', 'days', '9', 'days'], beforeAggregate: true },
    ]);
    expect(windowed.items[1]).toBe(query.items[1]);
    expect(query.items[0]!.filters).toHaveLength(2);
  });
  it('finds items by ref first, then by header', () => {
    expect(findItemIndex(query, 'day')).toBe(0);
    expect(findItemIndex(query, 'N')).toBe(1);
    expect(findItemIndex(query, 'nope')).toBe(-1);
  });
  it('prefers a ref over another item whose header is the same name', () => {
    const clash = { ...query, items: [{ ...query.items[1]!, header: 'day' }, query.items[0]!] } as ExportQuery;
    expect(findItemIndex(clash, 'day')).toBe(1);
  });
  it('adds the rw filter to a date item that has no filter at all', () => {
    const bare = { ...query, items: [{ ...query.items[0]!, filters: [] }, query.items[1]!] } as ExportQuery;
    expect(queryForWindow(bare, 0, window, now).items[0]!.filters).toEqual([{ operator: 'rw', values: ['13', 'days', '9', 'days'], beforeAggregate: true }]);
  });
  it('replaces every rw filter the date item had, leaving one', () => {
    const twice = {
      ...query,
      items: [{ ...query.items[0]!, filters: [...query.items[0]!.filters, { operator: 'rw', values: ['1', 'days', '0', 'days'] }] }, query.items[1]!],
    } as ExportQuery;
    expect(rwOf(queryForWindow(twice, 0, window, now), 0).values).toEqual(['13', 'days', '9', 'days']);
  });
  it("leaves another item's rw filter alone (only the date item is the window's)", () => {
    const other = {
      ...query,
      items: [query.items[0]!, { ...query.items[1]!, dataType: 'datetime', filters: [{ operator: 'rw', values: ['400', 'days', '0', 'days'] }] }],
    } as ExportQuery;
    const windowed = queryForWindow(other, 0, window, now);
    expect(windowed.items[1]).toBe(other.items[1]);
    expect(rwOf(windowed, 0).values).toEqual(['13', 'days', '9', 'days']);
  });
  it('keeps the query options and the items order', () => {
    const withOptions = { ...query, options: { includeTotals: true } } as ExportQuery;
    const windowed = queryForWindow(withOptions, 0, window, now);
    expect(windowed.options).toEqual({ includeTotals: true });
    expect(windowed.items.map((item) => item.header)).toEqual(['Day', 'N']);
  });
  it('refuses a tile with no date item instead of asking for the unfiltered query', () => {
    const noDate = { ...query, items: [query.items[1]!] } as ExportQuery;
    const index = findItemIndex(noDate, 'day');
    expect(index).toBe(-1);
    let caught: unknown;
    try {
      queryForWindow(noDate, index, window, now);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(WindowItemMissingError);
    expect(isTilehouseError(caught) && caught.code).toBe('window_item_missing');
    expect((caught as Error).message).toContain('item index -1');
    expect(() => queryForWindow(noDate, 1, window, now)).toThrow(WindowItemMissingError);
  });
});
