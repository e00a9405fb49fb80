import { describe, expect, it } from 'vitest';
import { wasOpen } from '../../../src/sinks/stores/window-open.js';

const window = { from: '2026-07-05', to: '2026-07-06' };

describe('wasOpen', () => {
  it('takes what a manifest says about its window', () => {
    expect(wasOpen({ window: { ...window, open: true }, preparedAt: '2026-07-09T00:00:00Z' }, window, 'UTC')).toBe(true);
    expect(wasOpen({ window: { ...window, open: false }, preparedAt: '2026-07-05T10:00:00Z' }, window, 'UTC')).toBe(false);
  });

  it('judges a manifest written before the field existed by when it was prepared against the end of its day in the job timezone', () => {
    // Prepared at 23:30 UTC on the 5th: after the day ended in UTC, before it ended in Los Angeles (16:30 there).
    const old = { window, preparedAt: '2026-07-05T23:30:00Z' };
    expect(wasOpen(old, window, 'UTC')).toBe(true);
    expect(wasOpen({ window, preparedAt: '2026-07-06T00:00:01Z' }, window, 'UTC')).toBe(false);
    expect(wasOpen({ window, preparedAt: '2026-07-06T06:00:00Z' }, window, 'America/Los_Angeles')).toBe(true);
    expect(wasOpen({ window, preparedAt: '2026-07-06T07:00:01Z' }, window, 'America/Los_Angeles')).toBe(false);
  });

  it('counts a manifest that does not say when it was prepared as open: exported again rather than skipped', () => {
    expect(wasOpen({ window }, window, 'UTC')).toBe(true);
    expect(wasOpen({ window, preparedAt: 'yesterday' }, window, 'UTC')).toBe(true);
    expect(wasOpen({ window: { ...window, open: 'no' }, preparedAt: '2026-07-07T00:00:00Z' }, window, 'UTC')).toBe(false);
  });
});
