import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import { parseInt64 } from '../../../src/transform/values/parse-int64.js';
import { ValueFailure } from '../../../src/transform/values/value-failure.js';

describe('parseInt64', () => {
  it.each([
    [0, 0n],
    [-0, 0n],
    [42, 42n],
    [-42, -42n],
    [Number.MAX_SAFE_INTEGER, 9007199254740991n],
    ['42', 42n],
    [' -42 ', -42n],
    ['+42', 42n],
    ['12.0', 12n],
    ['1.2e1', 12n],
    ['1e3', 1000n],
    ['-0', 0n],
    ['50%', 50n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
    ['0000000000000000000000000042', 42n],
  ])('reads %j as %s', (input, expected) => {
    expect(parseInt64(input)).toBe(expected);
  });

  it.each([
    [12.5, 'fractional'],
    ['12.5', 'fractional'],
    ['1e-1', 'fractional'],
    [9007199254740992, 'precision'],
    [2 ** 53 + 2, 'precision'],
    [1e21, 'precision'],
    ['1e21', 'INT64 range'],
    ['9223372036854775808', 'INT64 range'],
    ['-9223372036854775809', 'INT64 range'],
    ['1e99999999999', 'INT64 range'],
    ['', 'number'],
    ['1,000', 'number'],
    ['abc', 'number'],
    [Number.NaN, 'finite'],
    [true, 'number'],
    [{ value: 1 }, 'number'],
  ])('refuses %j (%s)', (input, reason) => {
    const result = parseInt64(input);
    expect(result).toBeInstanceOf(ValueFailure);
    expect((result as ValueFailure).reason).toContain(reason);
  });

  it('reads null and undefined as null', () => {
    expect(parseInt64(null)).toBeNull();
    expect(parseInt64(undefined)).toBeNull();
  });

  it('reads every int64 exactly from its decimal text (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        expect(parseInt64(value.toString())).toBe(value);
      }),
    );
  });
});

describe('parseInt64 of a literal the JSON reader kept exact', () => {
  it.each([
    ['9007199254740993', 9007199254740993n],
    ['-9007199254740993', -9007199254740993n],
    ['9223372036854775807', 9223372036854775807n],
    ['-9223372036854775808', -9223372036854775808n],
    ['10000000000000000000e-1', 1000000000000000000n],
    ['1234567890123456789.000000000', 1234567890123456789n],
  ])('reads %s exactly', (literal, expected) => {
    expect(parseInt64(new ExactNumber(literal))).toBe(expected);
  });

  it.each([
    ['9223372036854775808', 'INT64 range'],
    ['-9223372036854775809', 'INT64 range'],
    ['123456789012345678901234567890', 'INT64 range'],
    ['1e400', 'INT64 range'],
    ['12345678901234567.5', 'fractional'],
    ['9007199254740993.0000000001', 'fractional'],
    ['1e-400', 'fractional'],
  ])('refuses %s (%s)', (literal, reason) => {
    const result = parseInt64(new ExactNumber(literal));
    expect(result).toBeInstanceOf(ValueFailure);
    expect((result as ValueFailure).reason).toContain(reason);
  });

  it('reads every int64 exactly from a JSON number literal (property)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        expect(parseInt64(new ExactNumber(value.toString()))).toBe(value);
      }),
    );
  });
});
