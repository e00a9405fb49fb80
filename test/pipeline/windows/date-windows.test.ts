import { describe, expect, it } from 'vitest';
import { splitWindows } from '../../../src/pipeline/windows/date-windows.js';

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
