/**
 * Proleptic Gregorian calendar arithmetic on plain numbers (H. Hinnant's days_from_civil /
 * civil_from_days), and the one rule of what a calendar date is (`isCivilDate`,
 * `isCalendarDate`): config, the source's window, transform, the sinks and the summary all ask
 * it. It lies here, below config, because config is the lowest layer that needs it. `Date.UTC` cannot be used directly: it maps years 0–99 to 1900–1999, and the
 * supported range starts at year 1. Pure arithmetic also keeps the hot path allocation-free.
 */

export const MS_PER_DAY = 86_400_000;

/** Days since 1970-01-01 of a proleptic Gregorian date (month 1–12). */
export function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const monthFromMarch = month > 2 ? month - 3 : month + 9;
  const dayOfYear = Math.floor((153 * monthFromMarch + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

export function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}

/** BigQuery's DATE/TIMESTAMP range, which is also the range a 4-digit ISO year can express. */
export const MIN_DAY = daysFromCivil(1, 1, 1);
export const MAX_DAY = daysFromCivil(9999, 12, 31);
export const MIN_EPOCH_MS = MIN_DAY * MS_PER_DAY;
export const MAX_EPOCH_MS = (MAX_DAY + 1) * MS_PER_DAY - 1;

/** "YYYY-MM-DD" of a day number (days since 1970-01-01); callers keep it within MIN_DAY..MAX_DAY. */
export function formatCivilDate(days: number): string {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthFromMarch = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthFromMarch + 2) / 5) + 1;
  const month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const yearText = year >= 1000 ? `${year}` : `${year}`.padStart(4, '0');
  return `${yearText}-${month < 10 ? '0' : ''}${month}-${day < 10 ? '0' : ''}${day}`;
}

/**
 * The one rule of a calendar date: a real day of 0001-01-01..9999-12-31 (BigQuery's DATE range,
 * and what a 4-digit ISO year can write). 2026-02-30 is refused, never rolled over to March.
 */
export function isCivilDate(year: number, month: number, day: number): boolean {
  return (
    Number.isInteger(year) &&
    Number.isInteger(month) &&
    Number.isInteger(day) &&
    year >= 1 &&
    year <= 9999 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysInMonth(year, month)
  );
}

// Exactly `YYYY-MM-DD`: two-digit month and day ("2026-2-3" is not one), ASCII digits only.
const CALENDAR_DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The day number (days since 1970-01-01) of a `YYYY-MM-DD` text that `isCalendarDate` accepts, else undefined. */
export function dayNumberOfCalendarDate(text: string): number | undefined {
  const match = CALENDAR_DATE_TEXT.exec(text);
  if (match === null) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  return isCivilDate(year, month, day) ? daysFromCivil(year, month, day) : undefined;
}

/** Whether `text` is a calendar date written `YYYY-MM-DD` (see `isCivilDate`). */
export function isCalendarDate(text: string): boolean {
  return dayNumberOfCalendarDate(text) !== undefined;
}
