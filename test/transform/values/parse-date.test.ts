import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import { parseDate } from '../../../src/transform/values/parse-date.js';
import { ValueFailure } from '../../../src/transform/values/value-failure.js';

describe('parseDate', () => {
  it.each([
    ['2024-01-15', '2024-01-15'],
    [' 2024-01-15 ', '2024-01-15'],
    ['2024-02-29', '2024-02-29'],
    ['2000-02-29', '2000-02-29'],
    ['0001-01-01', '0001-01-01'],
    ['9999-12-31', '9999-12-31'],
  ])('reads the calendar date %j as %s', (input, expected) => {
    expect(parseDate(input)).toBe(expected);
    expect(parseDate(input, 'Pacific/Kiritimati')).toBe(expected);
  });

  it('takes the written date of a date-time without a zone, whatever the job zone', () => {
    expect(parseDate('2024-01-31T23:30:00', 'Europe/Berlin')).toBe('2024-01-31');
    expect(parseDate('2024-03-31T02:30:00', 'Europe/Berlin')).toBe('2024-03-31');
  });

  it.each([
    ['2024-01-31T23:30:00Z', 'UTC', '2024-01-31'],
    ['2024-01-31T23:30:00Z', 'Europe/Berlin', '2024-02-01'],
    ['2024-02-01T03:00:00+02:00', 'America/New_York', '2024-01-31'],
    [0, 'UTC', '1970-01-01'],
    [0, 'America/New_York', '1969-12-31'],
    ['0', 'Asia/Tokyo', '1970-01-01'],
    [{ $date: 1_706_743_800_000 }, 'Europe/Berlin', '2024-02-01'],
    [{ $date: 1_706_743_800_000 }, 'UTC', '2024-01-31'],
  ])('reads the instant %j as its date in %s: %s', (input, zone, expected) => {
    expect(parseDate(input, zone)).toBe(expected);
  });

  it.each([
    ['2023-02-29'],
    ['1900-02-29'],
    ['2024-13-01'],
    ['2024-00-10'],
    ['2024-04-31'],
    ['0000-01-01'],
    ['24-01-15'],
    ['2024/01/15'],
    ['15.01.2024'],
    [''],
    [1.5],
    [true],
    [{}],
  ])('refuses %j', (input) => {
    expect(parseDate(input)).toBeInstanceOf(ValueFailure);
  });

  it('refuses an instant whose date in the job zone falls outside 0001-01-01..9999-12-31', () => {
    expect(parseDate('9999-12-31T23:00:00Z', 'Asia/Tokyo')).toBeInstanceOf(ValueFailure);
    expect(parseDate('9999-12-31T23:00:00Z', 'UTC')).toBe('9999-12-31');
  });

  it('reads null and undefined as null', () => {
    expect(parseDate(null)).toBeNull();
    expect(parseDate(undefined)).toBeNull();
  });
});

describe('parseDate of a literal the JSON reader kept exact', () => {
  it('reads it as JSON.parse reads the literal: the same day, and the same refusals (run-backfill buckets rows by it)', () => {
    expect(parseDate(new ExactNumber('1706743800000.0000000001'))).toBe(parseDate(1_706_743_800_000));
    expect(parseDate(new ExactNumber('1706743800000.5000000000000001'))).toBeInstanceOf(ValueFailure);
    expect(parseDate({ $date: new ExactNumber('99999999999999999999') })).toBeInstanceOf(ValueFailure);
  });
});
