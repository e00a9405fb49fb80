import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import { parseTimestamp } from '../../../src/transform/values/parse-timestamp.js';
import { ValueFailure } from '../../../src/transform/values/value-failure.js';

const at = (iso: string) => Date.parse(iso);

describe('parseTimestamp', () => {
  describe('instants', () => {
    it.each([
      [1_700_000_000_000, '2023-11-14T22:13:20.000Z'],
      [0, '1970-01-01T00:00:00.000Z'],
      [-86_400_000, '1969-12-31T00:00:00.000Z'],
      ['1700000000000', '2023-11-14T22:13:20.000Z'],
      [' -1000 ', '1969-12-31T23:59:59.000Z'],
      [{ $date: 1_700_000_000_000 }, '2023-11-14T22:13:20.000Z'],
      [{ $date: '1700000000000' }, '2023-11-14T22:13:20.000Z'],
    ])('reads epoch milliseconds %j as %s', (input, expected) => {
      expect(parseTimestamp(input)).toBe(at(expected));
    });

    it('ignores the job zone for epoch milliseconds', () => {
      expect(parseTimestamp(1_700_000_000_000, 'Europe/Berlin')).toBe(1_700_000_000_000);
    });

    it('turns -0 into 0', () => {
      expect(Object.is(parseTimestamp(-0), 0)).toBe(true);
    });
  });

  describe('ISO 8601 with a zone', () => {
    it.each([
      ['2024-01-15T10:00:00Z', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15t10:00:00z', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15T10:00:00.123Z', '2024-01-15T10:00:00.123Z'],
      ['2024-01-15T10:00:00.123456789Z', '2024-01-15T10:00:00.123Z'],
      ['2024-01-15T10:00:00.5Z', '2024-01-15T10:00:00.500Z'],
      ['2024-01-15T10:00Z', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15T12:00:00+02:00', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15T12:00:00+0200', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15T12:00:00+02', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15T05:30:00-04:30', '2024-01-15T10:00:00.000Z'],
      ['2024-01-15 10:00:00Z', '2024-01-15T10:00:00.000Z'],
    ])('reads %s as %s whatever the job zone', (input, expected) => {
      expect(parseTimestamp(input, 'UTC')).toBe(at(expected));
      expect(parseTimestamp(input, 'Europe/Berlin')).toBe(at(expected));
    });
  });

  describe('ISO 8601 without a zone, in the job zone', () => {
    it('reads it as UTC by default', () => {
      expect(parseTimestamp('2024-01-15T10:00:00')).toBe(at('2024-01-15T10:00:00Z'));
    });

    it.each([
      ['2024-01-15T10:00:00', '2024-01-15T09:00:00.000Z'],
      ['2024-07-15T10:00:00', '2024-07-15T08:00:00.000Z'],
      ['2024-01-15', '2024-01-14T23:00:00.000Z'],
      ['2024-07-15', '2024-07-14T22:00:00.000Z'],
    ])('reads %s in Europe/Berlin as %s', (input, expected) => {
      expect(parseTimestamp(input, 'Europe/Berlin')).toBe(at(expected));
    });

    it.each([
      // Spring forward 2024-03-31: 02:00 CET jumps to 03:00 CEST.
      ['2024-03-31T01:59:59', '2024-03-31T00:59:59.000Z', 'just before the gap'],
      ['2024-03-31T02:00:00', '2024-03-31T01:00:00.000Z', 'in the gap: moved forward to 03:00 CEST'],
      ['2024-03-31T02:30:00', '2024-03-31T01:30:00.000Z', 'in the gap: moved forward to 03:30 CEST'],
      ['2024-03-31T03:00:00', '2024-03-31T01:00:00.000Z', 'just after the gap'],
      // Fall back 2024-10-27: 03:00 CEST goes back to 02:00 CET; 02:00–02:59 happens twice.
      ['2024-10-27T01:59:59', '2024-10-26T23:59:59.000Z', 'before the overlap'],
      ['2024-10-27T02:00:00', '2024-10-27T00:00:00.000Z', 'in the overlap: the earlier (CEST) instant'],
      ['2024-10-27T02:30:00', '2024-10-27T00:30:00.000Z', 'in the overlap: the earlier (CEST) instant'],
      ['2024-10-27T03:00:00', '2024-10-27T02:00:00.000Z', 'after the overlap'],
    ])('reads %s in Europe/Berlin as %s (%s)', (input, expected) => {
      expect(parseTimestamp(input, 'Europe/Berlin')).toBe(at(expected));
    });

    it('uses the zone’s historical offsets (Berlin local mean time before 1893)', () => {
      expect(parseTimestamp('1850-06-01T12:00:00', 'Europe/Berlin')).toBe(at('1850-06-01T11:06:32Z'));
    });

    it('handles zones west of UTC and with half-hour offsets', () => {
      expect(parseTimestamp('2024-03-10T02:30:00', 'America/New_York')).toBe(at('2024-03-10T07:30:00Z'));
      expect(parseTimestamp('2024-11-03T01:30:00', 'America/New_York')).toBe(at('2024-11-03T05:30:00Z'));
      expect(parseTimestamp('2024-01-15T10:00:00', 'Asia/Kolkata')).toBe(at('2024-01-15T04:30:00Z'));
    });

    it('gives the same instant on repeated calls (the offset cache does not change answers)', () => {
      const first = parseTimestamp('2024-10-27T02:30:00', 'Europe/Berlin');
      for (let i = 0; i < 3; i++) expect(parseTimestamp('2024-10-27T02:30:00', 'Europe/Berlin')).toBe(first);
    });
  });

  describe('range 0001-01-01..9999-12-31', () => {
    it.each([
      ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
      ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
      ['0001-01-01', '0001-01-01T00:00:00.000Z'],
    ])('accepts the edge %s', (input, expected) => {
      expect(new Date(parseTimestamp(input) as number).toISOString()).toBe(expected);
    });

    it.each([
      ['0000-12-31T23:59:59Z'],
      ['0001-01-01T00:30:00+01:00'],
      ['9999-12-31T23:00:00-01:00'],
      [253_402_300_800_000],
      [-62_135_596_800_001],
      ['99999999999999999'],
    ])('refuses %j outside it', (input) => {
      const result = parseTimestamp(input);
      expect(result).toBeInstanceOf(ValueFailure);
      expect((result as ValueFailure).reason).toContain('range');
    });

    it('refuses a wall-clock time at 0001-01-01 that lies before year 1 in UTC', () => {
      expect(parseTimestamp('0001-01-01T00:00:00', 'Europe/Berlin')).toBeInstanceOf(ValueFailure);
    });
  });

  it.each([
    [''],
    ['yesterday'],
    ['2024-1-5'],
    ['2024-02-30'],
    ['2023-02-29T10:00:00Z'],
    ['2024-01-15T24:00:00Z'],
    ['2024-01-15T10:60:00Z'],
    ['2024-06-30T23:59:60Z'],
    ['2024-01-15T10:00:00+25:00'],
    ['2024-01-15T10'],
    ['20240115T100000Z'],
    [1.5],
    [Number.NaN],
    [true],
    [{ $date: null }],
    [{ $date: { $numberLong: '1' } }],
    [{ date: 1 }],
    [[1_700_000_000_000]],
  ])('refuses %j', (input) => {
    expect(parseTimestamp(input)).toBeInstanceOf(ValueFailure);
  });

  it('reads null and undefined as null', () => {
    expect(parseTimestamp(null, 'Europe/Berlin')).toBeNull();
    expect(parseTimestamp(undefined)).toBeNull();
  });
});

describe('parseTimestamp of a literal the JSON reader kept exact', () => {
  it.each([
    [new ExactNumber('1706743800000.5000000000000001'), 'whole number'],
    [{ $date: new ExactNumber('1706743800000.2500000000000001') }, 'whole number'],
    [new ExactNumber('17067438000000000000'), 'range'],
    [{ $date: new ExactNumber('-17067438000000000000') }, 'range'],
  ])('refuses %o (%s), as it refuses the double JSON.parse reads', (value, reason) => {
    const result = parseTimestamp(value);
    expect(result).toBeInstanceOf(ValueFailure);
    expect((result as ValueFailure).reason).toContain(reason);
  });

  it('reads it as JSON.parse reads the literal, so the exact text never changes an instant', () => {
    // A fraction below what a double holds at this magnitude is not data: both readings agree.
    for (const literal of ['1706743800000.0000000001', '1706743800000.00000000000000000001', '17067438e5']) {
      expect(parseTimestamp(new ExactNumber(literal))).toBe(parseTimestamp(JSON.parse(literal)));
      expect(parseTimestamp({ $date: new ExactNumber(literal) })).toBe(1_706_743_800_000);
    }
  });
});
