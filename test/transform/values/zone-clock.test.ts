import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ZoneClock } from '../../../src/transform/values/zone-clock.js';

const HOUR = 3_600_000;

describe('ZoneClock', () => {
  it('reports Berlin’s offsets either side of a DST change', () => {
    const clock = new ZoneClock('Europe/Berlin');
    const change = Date.parse('2024-03-31T01:00:00Z');
    expect(clock.offsetAt(change - 1)).toBe(HOUR);
    expect(clock.offsetAt(change)).toBe(2 * HOUR);
  });

  const RealDateTimeFormat = Intl.DateTimeFormat;
  afterEach(() => {
    Intl.DateTimeFormat = RealDateTimeFormat;
  });

  it("answers for UTC, every job's default zone, without creating an Intl formatter (ICU data costs ~8 MB RSS)", () => {
    const created: string[] = [];
    Intl.DateTimeFormat = class extends RealDateTimeFormat {
      constructor(locales?: string | string[], options?: Intl.DateTimeFormatOptions) {
        super(locales, options);
        created.push(String(options?.timeZone));
      }
    } as typeof Intl.DateTimeFormat;
    const clock = new ZoneClock('UTC');
    expect(clock.offsetAt(Date.parse('2024-03-31T01:00:00Z'))).toBe(0);
    expect(clock.toInstant(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(created).toEqual([]);
    // Any other zone still goes through Intl, which is also what rejects a zone that does not exist.
    expect(new ZoneClock('Europe/Berlin').offsetAt(Date.parse('2024-07-01T00:00:00Z'))).toBe(2 * HOUR);
    expect(created).toEqual(['Europe/Berlin']);
    expect(() => new ZoneClock('Mars/Olympus_Mons')).toThrow(RangeError);
  });

  it('treats UTC aliases as a fixed zero offset', () => {
    for (const zone of ['UTC', 'Etc/UTC', 'utc']) expect(new ZoneClock(zone).offsetAt(1_700_000_000_000)).toBe(0);
  });

  it('maps any instant to wall-clock time and back to the same instant outside overlaps (property)', () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Sao_Paulo'];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: Date.parse('1900-01-01T00:00:00Z'), max: Date.parse('2100-01-01T00:00:00Z') }),
        (zone, instant) => {
          const clock = new ZoneClock(zone);
          const wall = clock.toWallMs(instant);
          const back = clock.toInstant(wall);
          // In an overlap the earlier instant is chosen, which shows the same wall-clock time.
          expect(clock.toWallMs(back)).toBe(wall);
          expect(back).toBeLessThanOrEqual(instant);
        },
      ),
    );
  });

  it('agrees with Intl on the offset of any instant (property)', () => {
    const clock = new ZoneClock('America/New_York');
    const format = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', timeZoneName: 'longOffset' });
    fc.assert(
      fc.property(fc.integer({ min: Date.parse('1970-01-01T00:00:00Z'), max: Date.parse('2040-01-01T00:00:00Z') }), (instant) => {
        const name = format.formatToParts(instant).find((part) => part.type === 'timeZoneName')?.value ?? '';
        const match = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
        const expected = match ? (match[1] === '-' ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) * 60_000 : 0;
        expect(clock.offsetAt(instant)).toBe(expected);
      }),
    );
  });
});
