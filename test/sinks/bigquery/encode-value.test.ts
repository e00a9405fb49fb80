import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BigQueryValueError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import { encodeValue, toRfc3339 } from '../../../src/sinks/bigquery/encode-value.js';
import type { ColumnType } from '../../../src/value-types/column-types.js';

const as = (type: ColumnType) => ({ name: `a_${type.toLowerCase()}`, type });

describe('encodeValue', () => {
  it('writes null as JSON null for every type', () => {
    for (const type of ['FLOAT64', 'INT64', 'NUMERIC', 'STRING', 'TIMESTAMP', 'DATE'] as const) {
      expect(encodeValue(null, as(type))).toBe('null');
    }
  });

  it('writes FLOAT64 as a JSON number', () => {
    expect(encodeValue(1.5, as('FLOAT64'))).toBe('1.5');
    expect(encodeValue(-0.000125, as('FLOAT64'))).toBe('-0.000125');
    expect(encodeValue(1e300, as('FLOAT64'))).toBe('1e+300');
  });

  it('refuses NaN and Infinity, which JSON cannot carry', () => {
    expect(() => encodeValue(Number.NaN, as('FLOAT64'))).toThrow(BigQueryValueError);
    expect(() => encodeValue(Number.POSITIVE_INFINITY, as('FLOAT64'))).toThrow(/a_float64.*Infinity/);
  });

  it('writes INT64 as a JSON string, exact beyond 2^53', () => {
    expect(encodeValue(42n, as('INT64'))).toBe('"42"');
    expect(encodeValue(9007199254740993n, as('INT64'))).toBe('"9007199254740993"');
    expect(encodeValue(-(2n ** 63n), as('INT64'))).toBe('"-9223372036854775808"');
  });

  it('refuses INT64 values outside the 64-bit range', () => {
    expect(() => encodeValue(2n ** 63n, as('INT64'))).toThrow(/a_int64: value 9223372036854775808 is outside the INT64 range/);
  });

  it('refuses a JavaScript number for INT64, which may already have lost digits', () => {
    expect(() => encodeValue(42, as('INT64'))).toThrow(/expected bigint/);
  });

  it('writes NUMERIC as a JSON string', () => {
    expect(encodeValue('-12.5', as('NUMERIC'))).toBe('"-12.5"');
    expect(encodeValue('12345678901234567890123456789.123456789', as('NUMERIC'))).toBe('"12345678901234567890123456789.123456789"');
  });

  it('refuses NUMERIC with more than 29 integer digits, naming value and column', () => {
    const value = '123456789012345678901234567890';
    expect(() => encodeValue(value, as('NUMERIC'))).toThrow(`column a_numeric: value ${value} does not fit NUMERIC`);
  });

  it('refuses NUMERIC with more than 9 fractional digits', () => {
    expect(() => encodeValue('0.1234567891', as('NUMERIC'))).toThrow(/has 0 and 10\)/);
  });

  it('does not count zeros that carry no precision against NUMERIC limits', () => {
    expect(encodeValue('0.1000000000000', as('NUMERIC'))).toBe('"0.1000000000000"');
    expect(encodeValue('000012345678901234567890123456789', as('NUMERIC'))).toBe('"000012345678901234567890123456789"');
  });

  it('refuses NUMERIC text that is not a plain decimal', () => {
    expect(() => encodeValue('1e5', as('NUMERIC'))).toThrow(/not a plain decimal/);
    expect(() => encodeValue('', as('NUMERIC'))).toThrow(/not a plain decimal/);
  });

  it('writes STRING with quotes, backslashes, newlines and unicode escaped as JSON', () => {
    const text = 'Zürich "HQ"\\ line1\nline2\t🚒 ✓';
    const encoded = encodeValue(text, as('STRING'));
    expect(encoded).not.toContain('\n');
    expect(JSON.parse(encoded)).toBe(text);
  });

  it('writes TIMESTAMP as RFC 3339 UTC with milliseconds', () => {
    expect(encodeValue(Date.UTC(2024, 1, 29, 23, 59, 58, 7), as('TIMESTAMP'))).toBe('"2024-02-29T23:59:58.007Z"');
    expect(encodeValue(0, as('TIMESTAMP'))).toBe('"1970-01-01T00:00:00.000Z"');
  });

  it('accepts the ends of the TIMESTAMP range and refuses beyond them', () => {
    expect(toRfc3339(-62_135_596_800_000, 'ts')).toBe('0001-01-01T00:00:00.000Z');
    expect(toRfc3339(Date.UTC(9999, 11, 31, 23, 59, 59, 999), 'ts')).toBe('9999-12-31T23:59:59.999Z');
    expect(() => toRfc3339(-62_135_596_800_001, 'ts')).toThrow(/TIMESTAMP range/);
    expect(() => toRfc3339(Date.UTC(10000, 0, 1), 'ts')).toThrow(/TIMESTAMP range/);
  });

  it('writes DATE as YYYY-MM-DD', () => {
    expect(encodeValue('2024-02-29', as('DATE'))).toBe('"2024-02-29"');
    expect(encodeValue('0001-01-01', as('DATE'))).toBe('"0001-01-01"');
  });

  it('refuses dates that are not on the calendar', () => {
    expect(() => encodeValue('2023-02-29', as('DATE'))).toThrow(/a_date: value "2023-02-29" is not a calendar date/);
    expect(() => encodeValue('2024-2-1', as('DATE'))).toThrow(BigQueryValueError);
  });

  it('gives the error a stable code', () => {
    try {
      encodeValue('x', as('FLOAT64'));
      expect.unreachable();
    } catch (error) {
      expect((error as BigQueryValueError).code).toBe('bigquery_value_invalid');
    }
  });

  it('round-trips any INT64 through its JSON text exactly', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        expect(BigInt(JSON.parse(encodeValue(value, as('INT64'))) as string)).toBe(value);
      }),
    );
  });

  it('round-trips any finite FLOAT64 through its JSON text exactly', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        expect(JSON.parse(encodeValue(value, as('FLOAT64')))).toBe(value === 0 ? 0 : value);
      }),
    );
  });

  it('round-trips any string through its JSON text on a single line', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (value) => {
        const encoded = encodeValue(value, as('STRING'));
        expect(encoded).not.toMatch(/[\n\r]/);
        expect(JSON.parse(encoded)).toBe(value);
      }),
    );
  });

  it('round-trips any in-range TIMESTAMP to the same instant at millisecond precision', () => {
    fc.assert(
      fc.property(fc.integer({ min: -62_135_596_800_000, max: 253_402_300_799_999 }), (ms) => {
        const text = JSON.parse(encodeValue(ms, as('TIMESTAMP'))) as string;
        expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        expect(Date.parse(text)).toBe(ms);
      }),
    );
  });
});
