import { formatCivilDate, MAX_DAY, MAX_EPOCH_MS, MIN_DAY, MIN_EPOCH_MS, MS_PER_DAY } from '../../value-types/civil-date.js';
import { readEpochMs } from './epoch-input.js';
import { parseIsoDateTime } from './iso-date-time.js';
import { FAILURES, isValueFailure, type ValueFailure } from './value-failure.js';
import { type ZoneClock, zoneClock } from './zone-clock.js';

/**
 * DATE as "YYYY-MM-DD". Accepted:
 * - `YYYY-MM-DD`, validated against the calendar (2023-02-29 fails);
 * - ISO 8601 without a zone: its written date. The text is already wall-clock time in the job's
 *   zone, so the date on it is the answer; a round trip through an instant could only change it
 *   in a DST gap, i.e. for a time that never existed;
 * - ISO 8601 with a zone, epoch milliseconds, `{"$date": ms}`: an instant, so the calendar date
 *   it falls on in `timeZone` (the job's zone) — "2024-01-31T23:30:00Z" is 2024-02-01 in Berlin.
 */
export function parseDate(value: unknown, timeZone = 'UTC'): string | null | ValueFailure {
  return parseDateIn(value, zoneClock(timeZone));
}

export function parseDateIn(value: unknown, clock: ZoneClock): string | null | ValueFailure {
  if (value === null || value === undefined) return null;
  let epochMs = readEpochMs(value);
  if (epochMs === undefined) {
    if (typeof value !== 'string') return FAILURES.notDate;
    const text = value.trim();
    const written = parseIsoDateTime(text);
    if (written === undefined) return FAILURES.notDate;
    if (isValueFailure(written)) return written;
    // The first ten characters are the written, already validated YYYY-MM-DD.
    if (written.offsetMs === undefined) return written.hasTime ? text.slice(0, 10) : text;
    epochMs = written.wallMs - written.offsetMs;
  }
  if (isValueFailure(epochMs)) return epochMs;
  if (epochMs < MIN_EPOCH_MS || epochMs > MAX_EPOCH_MS) return FAILURES.timestampRange;
  const day = Math.floor(clock.toWallMs(epochMs) / MS_PER_DAY);
  return day < MIN_DAY || day > MAX_DAY ? FAILURES.timestampRange : formatCivilDate(day);
}
