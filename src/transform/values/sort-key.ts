import { readEpochMs } from './epoch-input.js';
import { parseIsoDateTime } from './iso-date-time.js';
import { parseFloat64 } from './parse-float64.js';
import { isValueFailure } from './value-failure.js';

/**
 * The sort key of a cell in the column a query orders by, for the source's row-order check
 * (injected by the pipeline): a number that sorts the way the source sorts the column, or
 * undefined when the cell says nothing certain: null (nulls first or last is unstated), a value that does not parse (the
 * transform reports it), and a datetime without a zone (a source that sorts by instant and prints
 * local wall-clock time steps back an hour when DST ends). A double never reverses the order of
 * two exact decimals (rounding is monotonic), it can only make them tie, and a tie is accepted.
 */
export function sortKeyOf(value: unknown, dataType: 'number' | 'datetime'): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (dataType === 'number') {
    const number = parseFloat64(value);
    return typeof number === 'number' ? number : undefined;
  }
  const epochMs = readEpochMs(value);
  if (typeof epochMs === 'number') return epochMs;
  if (epochMs !== undefined || typeof value !== 'string') return undefined;
  const written = parseIsoDateTime(value.trim());
  if (written === undefined || isValueFailure(written) || written.offsetMs === undefined) return undefined;
  return written.wallMs - written.offsetMs;
}
