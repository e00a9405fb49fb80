import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import { parseNumeric } from '../../../src/transform/values/parse-numeric.js';
import { ValueFailure } from '../../../src/transform/values/value-failure.js';

describe('parseNumeric', () => {
  it.each([
    [0, '0'],
    [-0, '0'],
    [12.5, '12.5'],
    [-12.5, '-12.5'],
    [0.1, '0.1'],
    [1e21, '1000000000000000000000'],
    [1e-7, '0.0000001'],
    ['1e21', '1000000000000000000000'],
    ['12.500', '12.5'],
    ['12.000', '12'],
    ['007.50', '7.5'],
    ['-0', '0'],
    ['-0.000', '0'],
    ['+3', '3'],
    ['.5', '0.5'],
    ['12.5%', '12.5'],
    ['0e999999999', '0'],
    ['9007199254740993', '9007199254740993'],
    ['99999999999999999999999999999.999999999', '99999999999999999999999999999.999999999'],
    ['-99999999999999999999999999999.999999999', '-99999999999999999999999999999.999999999'],
    ['0.123456789000', '0.123456789'],
  ])('reads %j as %j', (input, expected) => {
    expect(parseNumeric(input)).toBe(expected);
  });

  it.each([
    ['100000000000000000000000000000', '29 integer digits'],
    [1e29, '29 integer digits'],
    ['0.0000000001', '9 fractional digits'],
    [0.30000000000000004, '9 fractional digits'],
    ['1e-10', '9 fractional digits'],
    ['1e99999999999999999999', '29 integer digits'],
    ['', 'number'],
    ['1,5', 'number'],
    ['NaN', 'number'],
    [Number.POSITIVE_INFINITY, 'finite'],
    [false, 'number'],
  ])('refuses %j (more than %s or not a number)', (input, reason) => {
    const result = parseNumeric(input);
    expect(result).toBeInstanceOf(ValueFailure);
    expect((result as ValueFailure).reason).toContain(reason);
  });

  it('reads null and undefined as null', () => {
    expect(parseNumeric(null)).toBeNull();
    expect(parseNumeric(undefined)).toBeNull();
  });

  it('returns canonical text that reads back to itself and to the same value (property)', () => {
    const decimalText = fc
      .tuple(
        fc.constantFrom('', '-', '+'),
        fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 1, maxLength: 29 }),
        fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 9 }),
      )
      .map(([sign, integer, fraction]) => `${sign}${integer}${fraction ? `.${fraction}` : ''}`);
    fc.assert(
      fc.property(decimalText, (text) => {
        const canonical = parseNumeric(text);
        expect(typeof canonical).toBe('string');
        expect(canonical).toMatch(/^(0|-?(0|[1-9]\d*)(\.\d*[1-9])?)$/);
        expect(parseNumeric(canonical)).toBe(canonical);
        // Same value: scaling both to 9 fractional digits compares them exactly.
        expect(scaled(canonical as string)).toBe(scaled(text));
      }),
    );
  });
});

function scaled(text: string): bigint {
  const negative = text.startsWith('-');
  const [integer = '', fraction = ''] = text.replace(/^[+-]/, '').split('.');
  const value = BigInt(integer + fraction.padEnd(9, '0'));
  return negative ? -value : value;
}

describe('parseNumeric of a literal the JSON reader kept exact', () => {
  it.each([
    ['12345678901234567.5', '12345678901234567.5'],
    ['-12345678901234567.5', '-12345678901234567.5'],
    ['99999999999999999999999999999.999999999', '99999999999999999999999999999.999999999'],
    ['0.1000000000000000000', '0.1'],
    ['1.2345678901234567890E+20', '123456789012345678900'],
    ['123456789012345678901234567890e-9', '123456789012345678901.23456789'],
    ['9007199254740993', '9007199254740993'],
  ])('reads %s from the digits sent: %s', (literal, expected) => {
    expect(parseNumeric(new ExactNumber(literal))).toBe(expected);
  });

  it.each([
    ['123456789012345678901234567890', 'integer digits'],
    ['1e400', 'integer digits'],
    ['0.1234567890123456789', 'fractional digits'],
    ['1e-400', 'fractional digits'],
  ])('refuses %s (%s) instead of rounding it', (literal, reason) => {
    const result = parseNumeric(new ExactNumber(literal));
    expect(result).toBeInstanceOf(ValueFailure);
    expect((result as ValueFailure).reason).toContain(reason);
  });
});
