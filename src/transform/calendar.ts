import { formatCivilDate, MS_PER_DAY } from '../value-types/civil-date.js';
import { zoneClock } from './values/zone-clock.js';

/**
 * The one answer to "which day is it there": file names (`{date}`), partitions, backfill windows
 * and DATE values all ask it, and must agree to the day. Built on the same zone clock and civil
 * arithmetic as the value parsers.
 */

/** YYYY-MM-DD of `instant` on the wall calendar of `timeZone`. */
export function calendarDateIn(instant: Date | number, timeZone: string): string {
  const epochMs = typeof instant === 'number' ? instant : instant.getTime();
  return formatCivilDate(Math.floor(zoneClock(timeZone).toWallMs(epochMs) / MS_PER_DAY));
}
