import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { calendarDateIn } from '../../src/transform/calendar.js';
import { parseDate } from '../../src/transform/index.js';

describe('calendarDateIn', () => {
  it('is the day on the wall calendar of the zone, not the UTC day', () => {
    expect(calendarDateIn(Date.parse('2024-01-31T23:30:00Z'), 'Europe/Berlin')).toBe('2024-02-01');
    expect(calendarDateIn(new Date('2024-01-31T23:30:00Z'), 'UTC')).toBe('2024-01-31');
    expect(calendarDateIn(Date.parse('2024-03-01T04:59:59Z'), 'America/New_York')).toBe('2024-02-29');
    // The night the clocks go back in Berlin: 00:30 local is still the 27th.
    expect(calendarDateIn(Date.parse('2024-10-26T22:30:00Z'), 'Europe/Berlin')).toBe('2024-10-27');
  });

  it('agrees with the DATE parser for any instant in any of a few zones', () => {
    const zones = ['UTC', 'Europe/Berlin', 'America/St_Johns', 'Asia/Kathmandu', 'Pacific/Kiritimati'];
    // A day inside the DATE range at both ends, so no zone takes the wall date out of it.
    const instants = fc.integer({ min: -62_135_596_800_000 + 86_400_000, max: 253_402_300_799_999 - 86_400_000 });
    fc.assert(
      fc.property(instants, fc.constantFrom(...zones), (epochMs, zone) => {
        expect(calendarDateIn(epochMs, zone)).toBe(parseDate(epochMs, zone));
      }),
      { numRuns: 500 },
    );
  });
});
