import { QueryError } from './query-error.js';

const DAY_MS = 86_400_000;

type Unit = 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year';
const UNITS: Readonly<Record<string, Unit>> = {
  minute: 'minute',
  minutes: 'minute',
  hour: 'hour',
  hours: 'hour',
  day: 'day',
  days: 'day',
  week: 'week',
  weeks: 'week',
  month: 'month',
  months: 'month',
  year: 'year',
  years: 'year',
};

export interface Window {
  /** Inclusive, epoch ms. */
  start: number;
  /** Exclusive, epoch ms. */
  end: number;
}

/**
 * The `rw` (relative window) operands `[n1, unit1, n2, unit2]`: the instants n1 units and n2 units
 * before `now`. The earlier one is the inclusive start and the later one the exclusive end, so
 * `['7', 'days', '0', 'days']` is the last seven days up to now, and consecutive windows
 * (`[14, days, 7, days]`, `[7, days, 0, days]`) never count an incident twice. The window slides
 * with `now`; it is not aligned to calendar days or months.
 */
export function relativeWindow(values: readonly string[], now: number): Window {
  if (values.length !== 4) {
    throw new QueryError(`rw needs 4 operands [n1, unit1, n2, unit2], e.g. ["30", "days", "0", "days"]; got ${JSON.stringify(values)}`);
  }
  const a = shiftBack(now, values[0]!, values[1]!);
  const b = shiftBack(now, values[2]!, values[3]!);
  return { start: Math.min(a, b), end: Math.max(a, b) };
}

/** `now` moved back by `amount` units; months and years move on the UTC calendar. */
export function shiftBack(now: number, amount: string, unitName: string): number {
  if (!/^\d+$/.test(amount.trim())) throw new QueryError(`rw amount must be a whole number, got '${amount}'`);
  const n = Number(amount.trim());
  const unit = UNITS[unitName.trim().toLowerCase()];
  switch (unit) {
    case 'minute':
      return now - n * 60_000;
    case 'hour':
      return now - n * 3_600_000;
    case 'day':
      return now - n * DAY_MS;
    case 'week':
      return now - n * 7 * DAY_MS;
    case 'month':
      return subtractMonths(now, n);
    case 'year':
      return subtractMonths(now, 12 * n);
    default:
      throw new QueryError(`rw unit must be one of minutes, hours, days, weeks, months, years; got '${unitName}'`);
  }
}

/** Calendar months back; a day that the target month lacks becomes its last day (Mar 31 − 1 month = Feb 28). */
function subtractMonths(now: number, months: number): number {
  const date = new Date(now);
  const day = date.getUTCDate();
  date.setUTCDate(1);
  date.setUTCMonth(date.getUTCMonth() - months);
  const lastDay = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
  date.setUTCDate(Math.min(day, lastDay));
  return date.getTime();
}
