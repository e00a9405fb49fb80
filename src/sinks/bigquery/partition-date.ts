/**
 * The day a `partition`-mode run writes: the backfill window's first day, else the day the run
 * started in the job's time zone (a run at 00:30 in Europe/Berlin belongs to that Berlin day, not
 * to the previous UTC day). Returned as YYYY-MM-DD.
 */
export function partitionDate(context: { startedAt: Date; window?: { from: string } }, timeZone: string): string {
  if (context.window) return context.window.from;
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(
    context.startedAt,
  );
  const part = (type: Intl.DateTimeFormatPartTypes) => parts.find((candidate) => candidate.type === type)?.value ?? '';
  return `${part('year').padStart(4, '0')}-${part('month')}-${part('day')}`;
}

/** `table$YYYYMMDD`: the load's destination addresses one day partition of the table. */
export function partitionDecorator(tableId: string, date: string): string {
  return `${tableId}$${date.replaceAll('-', '')}`;
}
