import { MAX_EPOCH_MS, MIN_EPOCH_MS } from '../../value-types/civil-date.js';
import { readEpochMs } from './epoch-input.js';
import { parseIsoDateTime } from './iso-date-time.js';
import { FAILURES, isValueFailure, type ValueFailure } from './value-failure.js';
import { type ZoneClock, zoneClock } from './zone-clock.js';

/**
 * TIMESTAMP as epoch milliseconds (UTC). Accepted:
 * - epoch milliseconds as a JSON number or an integer string;
 * - the spec's Timestamp object `{"$date": ms}`;
 * - ISO 8601 with a zone (`Z`, `+02:00`, `+0200`, `+02`) — the zone in the text wins;
 * - ISO 8601 without a zone, and `YYYY-MM-DD` (midnight) — wall-clock time in `timeZone`, the
 *   job's zone (DST gaps and overlaps: see ZoneClock.toInstant).
 * The result must lie in 0001-01-01T00:00:00.000Z..9999-12-31T23:59:59.999Z (BigQuery's range).
 */
export function parseTimestamp(value: unknown, timeZone = 'UTC'): number | null | ValueFailure {
  return parseTimestampIn(value, zoneClock(timeZone));
}

export function parseTimestampIn(value: unknown, clock: ZoneClock): number | null | ValueFailure {
  if (value === null || value === undefined) return null;
  let epochMs = readEpochMs(value);
  if (epochMs === undefined) {
    if (typeof value !== 'string') return FAILURES.notTimestamp;
    const written = parseIsoDateTime(value.trim());
    if (written === undefined) return FAILURES.notTimestamp;
    if (isValueFailure(written)) return written;
    epochMs = written.offsetMs === undefined ? clock.toInstant(written.wallMs) : written.wallMs - written.offsetMs;
  }
  if (isValueFailure(epochMs)) return epochMs;
  return epochMs < MIN_EPOCH_MS || epochMs > MAX_EPOCH_MS ? FAILURES.timestampRange : epochMs;
}
