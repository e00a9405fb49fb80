import { ExactNumber } from '../../value-types/exact-number.js';
import { formatDecimal, parseDecimal, toNumericText } from './decimal.js';
import { FAILURES, type ValueFailure } from './value-failure.js';
import { INT64_MAX, INT64_MIN } from '../warehouse-limits.js';

// int64 has 19 digits; anything longer is out of range without building a huge BigInt.
const INT64_MAX_DIGITS = 19;
const SHORT_INTEGER = /^[+-]?\d{1,18}$/;

/**
 * INT64 as an exact bigint.
 *
 * JSON numbers must be safe integers: beyond 2^53 the JSON parser has already rounded the value,
 * and loading the rounded number as if exact would be a silent lie. Strings, and literals the
 * JSON reader kept exact (ExactNumber: 9007199254740993 sent as a number), are read exactly; a
 * whole value written with a fractional part or exponent ("12.0", "1.2e1") is accepted because it
 * *is* an integer, "12.5" is not.
 */
export function parseInt64(value: unknown): bigint | null | ValueFailure {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return FAILURES.notFinite;
    if (!Number.isInteger(value)) return FAILURES.notInteger;
    if (!Number.isSafeInteger(value)) return FAILURES.unsafeInteger;
    return BigInt(value);
  }
  if (typeof value === 'string') return int64FromText(toNumericText(value));
  if (value instanceof ExactNumber) return int64FromText(value.text);
  if (typeof value === 'bigint') return inInt64Range(value);
  if (value === null || value === undefined) return null;
  return FAILURES.notNumber;
}

function int64FromText(text: string): bigint | ValueFailure {
  // Common case first: a plain integer short enough to be in range whatever its digits.
  if (SHORT_INTEGER.test(text)) return BigInt(text);
  const decimal = parseDecimal(text);
  if (decimal === undefined) return FAILURES.notNumber;
  if (decimal.coefficient.length === 0) return 0n;
  if (decimal.exponent < 0) return FAILURES.notInteger;
  if (decimal.coefficient.length + decimal.exponent > INT64_MAX_DIGITS) return FAILURES.int64Range;
  return inInt64Range(BigInt(formatDecimal(decimal)));
}

function inInt64Range(value: bigint): bigint | ValueFailure {
  return value < INT64_MIN || value > INT64_MAX ? FAILURES.int64Range : value;
}
