import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import { parseFloat64 } from '../../../src/transform/values/parse-float64.js';
import { ValueFailure } from '../../../src/transform/values/value-failure.js';

describe('parseFloat64', () => {
  it.each([
    [12.5, 12.5],
    [0, 0],
    [-3, -3],
    [1e21, 1e21],
    [Number.MAX_VALUE, Number.MAX_VALUE],
    ['12.5', 12.5],
    ['  42  ', 42],
    ['-7', -7],
    ['+7', 7],
    ['.5', 0.5],
    ['5.', 5],
    ['1e21', 1e21],
    ['1.5E-7', 1.5e-7],
    ['12.5%', 12.5],
    [' 80 % ', 80],
    ['9007199254740993', 9007199254740992],
  ])('reads %j as %j', (input, expected) => {
    expect(parseFloat64(input)).toBe(expected);
  });

  it('turns negative zero into zero', () => {
    expect(Object.is(parseFloat64(-0), 0)).toBe(true);
    expect(Object.is(parseFloat64('-0'), 0)).toBe(true);
    expect(Object.is(parseFloat64('-0.0%'), 0)).toBe(true);
  });

  it.each([
    [Number.NaN],
    [Number.POSITIVE_INFINITY],
    [Number.NEGATIVE_INFINITY],
    [''],
    ['   '],
    ['%'],
    ['abc'],
    ['1,234'],
    ['1 234'],
    ['0x10'],
    ['Infinity'],
    ['NaN'],
    ['1e999'],
    ['12.5%%'],
    [true],
    [{}],
    [[1]],
  ])('refuses %j', (input) => {
    expect(parseFloat64(input)).toBeInstanceOf(ValueFailure);
  });

  it('reads null and undefined as null', () => {
    expect(parseFloat64(null)).toBeNull();
    expect(parseFloat64(undefined)).toBeNull();
  });

  it('reads back any finite double from its JavaScript text (property)', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (number) => {
        expect(parseFloat64(String(number))).toBe(number === 0 ? 0 : number);
        expect(parseFloat64(number)).toBe(number === 0 ? 0 : number);
      }),
    );
  });

  it('accepts exactly the plain decimal notation, with optional spaces and one trailing % (property)', () => {
    const reference = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*(%\s*)?$/;
    const text = fc.string({ unit: fc.constantFrom(...'0123456789+-.eExXbBoO %InfinityNa,_ '.split('')), maxLength: 12 });
    fc.assert(
      fc.property(text, (input) => {
        const result = parseFloat64(input);
        const shaped = reference.test(input);
        if (!shaped) expect(result).toBeInstanceOf(ValueFailure);
        else if (Number.isFinite(Number(input.trim().replace(/%$/, '')))) expect(typeof result).toBe('number');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('parseFloat64 of a literal the JSON reader kept exact', () => {
  it.each([
    ['12345678901234567.5', 12345678901234568],
    ['9007199254740993', 9007199254740992],
    ['-0.1000000000000000000000001', -0.1],
    ['1e-400', 0],
    ['-1e-400', 0],
  ])('reads %s as the nearest double, %s', (literal, expected) => {
    expect(Object.is(parseFloat64(new ExactNumber(literal)), expected)).toBe(true);
  });

  it.each(['1e400', '-1E+400'])('refuses %s, which is beyond any double', (literal) => {
    expect(parseFloat64(new ExactNumber(literal))).toBeInstanceOf(ValueFailure);
  });
});
