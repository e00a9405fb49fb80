/**
 * The ranges BigQuery's types can hold, in one place: the value parsers refuse what falls outside
 * (naming page, row, column and value), and the BigQuery encoder asserts the same bounds.
 */
export { MAX_EPOCH_MS, MIN_EPOCH_MS } from '../value-types/civil-date.js';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;
/** NUMERIC is precision 38, scale 9: at most 29 digits before the point and 9 after it. */
export const NUMERIC_INTEGER_DIGITS = 29;
export const NUMERIC_SCALE = 9;
