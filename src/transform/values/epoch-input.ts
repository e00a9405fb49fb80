import { ExactNumber } from '../../value-types/exact-number.js';
import { FAILURES, type ValueFailure } from './value-failure.js';

const INTEGER_TEXT = /^[+-]?\d{1,20}$/;

/**
 * The epoch-millisecond reading shared by TIMESTAMP and DATE: a JSON number, an integer string,
 * or the spec's Timestamp object `{"$date": ms}` (whose `$date` may itself be one of those).
 * Returns undefined when the value is none of these, so the caller can try its text formats.
 */
export function readEpochMs(value: unknown): number | ValueFailure | undefined {
  if (typeof value === 'number') return epochFromNumber(value);
  if (value instanceof ExactNumber) return epochFromExact(value);
  if (typeof value === 'string') {
    const text = value.trim();
    return INTEGER_TEXT.test(text) ? epochFromNumber(Number(text)) : undefined;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, '$date')) {
    const inner = (value as { $date: unknown }).$date;
    if (typeof inner === 'number') return epochFromNumber(inner);
    if (inner instanceof ExactNumber) return epochFromExact(inner);
    if (typeof inner === 'string') {
      const text = inner.trim();
      if (INTEGER_TEXT.test(text)) return epochFromNumber(Number(text));
    }
    return FAILURES.notTimestamp;
  }
  return undefined;
}

/**
 * A literal the JSON reader kept exact is read as the nearest double, exactly as `JSON.parse` would
 * have read it: epoch milliseconds need no more than a double holds, a fraction the double keeps
 * is refused below like any other, and one it drops (below ~0.0002 ms at today's epochs) is not
 * data. So a TIMESTAMP or DATE never depends on the literal's text, and pages whose only numbers
 * are FLOAT64, TIMESTAMP or DATE values skip the source's scan for inexact literals
 * (numberTextColumns).
 */
function epochFromExact(value: ExactNumber): number | ValueFailure {
  return epochFromNumber(Number(value.text));
}

function epochFromNumber(value: number): number | ValueFailure {
  if (!Number.isFinite(value)) return FAILURES.notFinite;
  // Sub-millisecond epochs do not occur in this API; a fraction means the value is not epoch ms
  // (e.g. epoch seconds with a fraction, as the incident endpoints accept on input).
  if (!Number.isInteger(value)) return FAILURES.fractionalEpoch;
  return value === 0 ? 0 : value;
}
