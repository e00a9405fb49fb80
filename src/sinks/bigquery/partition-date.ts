import { calendarDateIn } from '../../transform/calendar.js';

/**
 * The day a `partition`-mode run writes: the backfill window's first day, else the day the run
 * started in the job's time zone (a run at 00:30 in Europe/Berlin belongs to that Berlin day, not
 * to the previous UTC day). Returned as YYYY-MM-DD.
 */
export function partitionDate(context: { startedAt: Date; window?: { from: string } }, timeZone: string): string {
  return context.window?.from ?? calendarDateIn(context.startedAt, timeZone);
}

/** `table$YYYYMMDD`: the load's destination addresses one day partition of the table. */
export function partitionDecorator(tableId: string, date: string): string {
  return `${tableId}$${date.replaceAll('-', '')}`;
}
