import { describe, expect, it } from 'vitest';
import { findItemIndex, queryForWindow, relativeWindowFor, splitWindows } from '../../../src/pipeline/windows/date-windows.js';

describe('splitWindows', () => {
  it('splits into days, the last day excluded', () => {
    expect(splitWindows('2026-02-27', '2026-03-02', 'day')).toEqual([
      { from: '2026-02-27', to: '2026-02-28' },
      { from: '2026-02-28', to: '2026-03-01' },
      { from: '2026-03-01', to: '2026-03-02' },
    ]);
  });
  it('splits into 7-day weeks from --from, cutting the last at --to', () => {
    expect(splitWindows('2026-03-04', '2026-03-20', 'week')).toEqual([
      { from: '2026-03-04', to: '2026-03-11' },
      { from: '2026-03-11', to: '2026-03-18' },
      { from: '2026-03-18', to: '2026-03-20' },
    ]);
  });
  it('follows calendar months, with partial first and last months', () => {
    expect(splitWindows('2026-01-15', '2026-03-10', 'month')).toEqual([
      { from: '2026-01-15', to: '2026-02-01' },
      { from: '2026-02-01', to: '2026-03-01' },
      { from: '2026-03-01', to: '2026-03-10' },
    ]);
  });
  it('refuses an empty or reversed range and impossible dates', () => {
    expect(() => splitWindows('2026-03-01', '2026-03-01', 'day')).toThrow(/must be after/);
    expect(() => splitWindows('2026-02-30', '2026-03-01', 'day')).toThrow(/not a calendar date/);
  });
});

describe('relativeWindowFor', () => {
  const now = new Date('2026-07-01T10:00:00Z');
  it('covers the whole window in the job timezone, widened by one day each side', () => {
    const [n1, , n2] = relativeWindowFor({ from: '2026-06-20', to: '2026-06-21' }, 'Europe/Berlin', now);
    // Window [2026-06-19T22:00Z, 2026-06-20T22:00Z); now - n1 days must be before its start, now - n2 days after its end.
    const start = now.getTime() - Number(n1) * 86_400_000;
    const end = now.getTime() - Number(n2) * 86_400_000;
    expect(start).toBeLessThanOrEqual(Date.parse('2026-06-19T22:00:00Z') - 86_400_000);
    expect(end).toBeGreaterThanOrEqual(Date.parse('2026-06-20T22:00:00Z') + 86_400_000);
    expect(end - start).toBeLessThanOrEqual(4 * 86_400_000);
  });
  it('never reaches into the future', () => {
    expect(relativeWindowFor({ from: '2026-06-30', to: '2026-07-02' }, 'UTC', now)[2]).toBe('0');
  });
});

describe('queryForWindow', () => {
  const query = {
    items: [
      { header: 'Day', ref: 'day', formula: '[incident.created]', dataType: 'datetime', filters: [{ operator: 'rw', values: ['30', 'days', '0', 'days'] }, { operator: 'gt', values: ['1'] }] },
      { header: 'N', formula: '[incident.number]', dataType: 'number', filters: [] },
    ],
    options: {},
  };
  it('replaces only the rw filter of the named item and keeps the rest', () => {
    const index = findItemIndex(query, 'day');
    const windowed = queryForWindow(query, index, ['12', 'days', '9', 'days']);
    expect(windowed.items[0]!.filters).toEqual([{ operator: 'gt', values: ['1'] }, { operator: 'rw', values: ['12', 'days', '9', 'days'], beforeAggregate: true }]);
    expect(windowed.items[1]).toBe(query.items[1]);
    expect(query.items[0]!.filters).toHaveLength(2);
  });
  it('finds items by ref first, then by header', () => {
    expect(findItemIndex(query, 'day')).toBe(0);
    expect(findItemIndex(query, 'N')).toBe(1);
    expect(findItemIndex(query, 'nope')).toBe(-1);
  });
});
