import { ExactNumber } from '../../value-types/exact-number.js';
import { type Decimal, formatDecimal, fractionDigitCount, integerDigitCount, parseDecimal, toNumericText } from './decimal.js';
import { FAILURES, type ValueFailure } from './value-failure.js';
import { NUMERIC_INTEGER_DIGITS, NUMERIC_SCALE } from '../warehouse-limits.js';

// BigQuery NUMERIC is DECIMAL(38, 9): 29 digits before the point, 9 after.

/**
 * NUMERIC as a canonical decimal string ("-12.5", "1000000000000000000000", never "1e21").
 *
 * Values that do not fit fail instead of being rounded: someone chose NUMERIC to get exact
 * decimals, so silently rounding the 10th fractional digit would defeat the point. A JSON number
 * is taken at its shortest round-trip text (0.1 → "0.1"); a float artefact such as
 * 0.30000000000000004 therefore fails — load such a column as FLOAT64 or round it in the formula.
 * A literal the JSON reader kept exact (ExactNumber, e.g. 12345678901234567.5) is read from the
 * digits sent, never through a double.
 */
export function parseNumeric(value: unknown): string | null | ValueFailure {
  let decimal: Decimal | undefined;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return FAILURES.notFinite;
    if (value === 0) return '0';
    const text = String(value);
    // JavaScript prints 1e-7 ≤ |x| < 1e21 without exponent, already canonical (no trailing zeros,
    // at most 21 integer digits); only the fraction length needs checking.
    if (!text.includes('e')) {
      const point = text.indexOf('.');
      return point >= 0 && text.length - point - 1 > NUMERIC_SCALE ? FAILURES.numericFractionDigits : text;
    }
    decimal = parseDecimal(text);
  } else if (typeof value === 'string') {
    decimal = parseDecimal(toNumericText(value));
  } else if (value instanceof ExactNumber) {
    decimal = parseDecimal(value.text);
  } else if (typeof value === 'bigint') {
    decimal = parseDecimal(String(value));
  } else if (value === null || value === undefined) {
    return null;
  }
  if (decimal === undefined) return FAILURES.notNumber;
  if (integerDigitCount(decimal) > NUMERIC_INTEGER_DIGITS) return FAILURES.numericIntegerDigits;
  if (fractionDigitCount(decimal) > NUMERIC_SCALE) return FAILURES.numericFractionDigits;
  return formatDecimal(decimal);
}
