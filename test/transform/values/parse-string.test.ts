import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import { parseString } from '../../../src/transform/values/parse-string.js';
import { ValueFailure } from '../../../src/transform/values/value-failure.js';

describe('parseString', () => {
  it.each([
    ['resolved', 'resolved'],
    ['  padded  ', '  padded  '],
    ['', ''],
    ['line1\r\nline2', 'line1\r\nline2'],
    ['emoji 🔥 and RTL עברית', 'emoji 🔥 and RTL עברית'],
    ['e\u0301', 'e\u0301'],
  ])('keeps %j exactly as sent', (input, expected) => {
    expect(parseString(input)).toBe(expected);
  });

  it.each([
    [12.5, '12.5'],
    [-0, '0'],
    [1e21, '1e+21'],
    [true, 'true'],
    [false, 'false'],
  ])('writes the number or boolean %j as its JSON text %j', (input, expected) => {
    expect(parseString(input)).toBe(expected);
    expect(parseString(input)).toBe(JSON.stringify(input));
  });

  it('replaces a lone surrogate with U+FFFD, as any UTF-8 encoder would', () => {
    expect(parseString('cut \ud83d')).toBe('cut \ufffd');
  });

  it.each([[{}], [{ a: 1 }], [[1, 2]], [Number.NaN]])('refuses %j', (input) => {
    expect(parseString(input)).toBeInstanceOf(ValueFailure);
  });

  it('reads null and undefined as null', () => {
    expect(parseString(null)).toBeNull();
    expect(parseString(undefined)).toBeNull();
  });
});

describe('parseString of a literal the JSON reader kept exact', () => {
  it.each(['12345678901234567.5', '-98765432109876543210', '1.0000000000000000000E+400'])('is the literal as sent: %s', (literal) => {
    expect(parseString(new ExactNumber(literal))).toBe(literal);
  });
});
