/**
 * Why a value did not parse. Parsers return this instead of throwing: the row loop handles
 * millions of values, `onInvalidValue: null` turns failures into counted nulls, and only the row
 * loop knows the page/row/column a useful error message needs. Most failures are module-level
 * constants, so even a column full of bad values allocates nothing.
 */
export class ValueFailure {
  constructor(readonly reason: string) {}
}

export function isValueFailure(result: unknown): result is ValueFailure {
  return result instanceof ValueFailure;
}

/** Shared failures; reasons are phrased to follow "value X is invalid: …". */
export const FAILURES = {
  notNumber: new ValueFailure('expected a number or a numeric string'),
  notFinite: new ValueFailure('not a finite number'),
  notInteger: new ValueFailure('has a fractional part; INT64 holds whole numbers only'),
  unsafeInteger: new ValueFailure('a JSON number beyond ±2^53 has already lost precision; send it as a string to load it exactly'),
  int64Range: new ValueFailure('outside the INT64 range -9223372036854775808..9223372036854775807'),
  numericIntegerDigits: new ValueFailure('more than 29 integer digits; BigQuery NUMERIC holds at most 29'),
  numericFractionDigits: new ValueFailure('more than 9 fractional digits; BigQuery NUMERIC holds at most 9 (round in the formula or load as FLOAT64)'),
  notText: new ValueFailure('objects and arrays are not text'),
  notTimestamp: new ValueFailure('expected epoch milliseconds, {"$date": ms}, an ISO 8601 date-time or YYYY-MM-DD'),
  notDate: new ValueFailure('expected YYYY-MM-DD, an ISO 8601 date-time, epoch milliseconds or {"$date": ms}'),
  fractionalEpoch: new ValueFailure('epoch milliseconds must be a whole number'),
  invalidCalendarDate: new ValueFailure('not a calendar date (month, day or time of day out of range)'),
  timestampRange: new ValueFailure('outside the supported range 0001-01-01..9999-12-31'),
} as const;
