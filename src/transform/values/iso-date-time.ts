import { daysFromCivil, daysInMonth, MS_PER_DAY } from './civil-date.js';
import { FAILURES, type ValueFailure } from './value-failure.js';

/** An ISO 8601 date or date-time as written, before any time-zone interpretation. */
export interface IsoDateTime {
  /** Day number (days since 1970-01-01) of the written calendar date. */
  days: number;
  /** The written wall-clock time read as if it were UTC, in epoch ms. */
  wallMs: number;
  /** False for a bare YYYY-MM-DD. */
  hasTime: boolean;
  /** The written UTC offset in ms (east positive); undefined when the text carries no zone. */
  offsetMs: number | undefined;
}

// Extended format only (RFC 3339 profile): date, optional time with seconds and fraction, optional
// zone as Z, ±HH:MM, ±HHMM or ±HH. A space is accepted for "T" because databases and many APIs print
// it that way. Basic format (20240131T120000) is not: an 8-digit string is epoch milliseconds.
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

/**
 * Reads an ISO 8601 date or date-time. Returns undefined when the text is not in that shape at
 * all (so callers can try other shapes or name their own expectation), and a failure when it is
 * shaped right but names no real moment (2023-02-29, 25:00, year 0000).
 *
 * Fractions beyond milliseconds are truncated: TIMESTAMP values are epoch milliseconds here.
 * A leap second (:60) is refused; neither JavaScript dates nor the sinks can hold it.
 */
export function parseIsoDateTime(text: string): IsoDateTime | ValueFailure | undefined {
  const match = ISO_DATE_TIME.exec(text);
  if (match === null) return undefined;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (year < 1) return FAILURES.timestampRange;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return FAILURES.invalidCalendarDate;
  const days = daysFromCivil(year, month, day);
  if (match[4] === undefined) {
    return { days, wallMs: days * MS_PER_DAY, hasTime: false, offsetMs: undefined };
  }
  const hour = Number(match[4]);
  const minute = Number(match[5]);
  const second = match[6] === undefined ? 0 : Number(match[6]);
  const millisecond = match[7] === undefined ? 0 : Number(match[7].slice(0, 3).padEnd(3, '0'));
  if (hour > 23 || minute > 59 || second > 59) return FAILURES.invalidCalendarDate;
  let offsetMs: number | undefined;
  if (match[8] !== undefined) {
    offsetMs = 0;
  } else if (match[9] !== undefined) {
    const offsetHours = Number(match[10]);
    const offsetMinutes = match[11] === undefined ? 0 : Number(match[11]);
    if (offsetHours > 23 || offsetMinutes > 59) return FAILURES.invalidCalendarDate;
    offsetMs = (match[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  }
  const wallMs = days * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millisecond;
  return { days, wallMs, hasTime: true, offsetMs };
}
