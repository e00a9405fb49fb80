import { ExactNumber } from '../../source/json-body.js';
import { parseDecimal } from './decimal.js';
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
 * A literal the JSON reader kept exact has more digits than a double holds, or lies beyond 2^53:
 * either it has a fraction (refused as such, even if the double would have been whole) or it is
 * far outside the TIMESTAMP range, which the caller's range check refuses.
 */
function epochFromExact(value: ExactNumber): number | ValueFailure {
  const decimal = parseDecimal(value.text);
  if (decimal === undefined) return FAILURES.notTimestamp;
  if (decimal.exponent < 0) return FAILURES.fractionalEpoch;
  return epochFromNumber(Number(value.text));
}

function epochFromNumber(value: number): number | ValueFailure {
  if (!Number.isFinite(value)) return FAILURES.notFinite;
  // Sub-millisecond epochs do not occur in this API; a fraction means the value is not epoch ms
  // (e.g. epoch seconds with a fraction, as the incident endpoints accept on input).
  if (!Number.isInteger(value)) return FAILURES.fractionalEpoch;
  return value === 0 ? 0 : value;
}
