import { ExactNumber } from '../../value-types/exact-number.js';
import { decimalTextToNumber, toNumericText } from './decimal.js';
import { FAILURES, type ValueFailure } from './value-failure.js';

/**
 * FLOAT64 from a JSON number or a numeric string ("12.5", " 3 ", "1e21", "12.5%").
 *
 * - A literal the JSON reader kept exact (an ExactNumber) becomes the nearest double: that is what
 *   FLOAT64 means, and the column's type is the job author's choice.
 *
 * - `-0` becomes `0`: BigQuery and CSV readers disagree on negative zero, and no report means it.
 * - NaN and ±Infinity fail: BigQuery would accept them, but coming from a tile they are a formula
 *   bug (division by zero), not a measurement.
 * - `""` fails rather than becoming null. Only null/undefined mean "no value": the API sends null
 *   for an empty cell, so an empty string in a number column means the column is not what its
 *   dataType claims, and quietly nulling it would hide that.
 */
export function parseFloat64(value: unknown): number | null | ValueFailure {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return FAILURES.notFinite;
    return value === 0 ? 0 : value;
  }
  if (typeof value === 'string') {
    const number = decimalTextToNumber(toNumericText(value));
    if (Number.isNaN(number)) return FAILURES.notNumber;
    if (!Number.isFinite(number)) return FAILURES.notFinite;
    return number === 0 ? 0 : number;
  }
  if (value instanceof ExactNumber) {
    const number = Number(value.text);
    if (!Number.isFinite(number)) return FAILURES.notFinite;
    return number === 0 ? 0 : number;
  }
  if (typeof value === 'bigint') return Number(value);
  if (value === null || value === undefined) return null;
  return FAILURES.notNumber;
}
