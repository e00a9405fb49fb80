import { QueryError } from './query-error.js';

/**
 * Item `function`s: each truncates a datetime to the start of its bucket (UTC). The spec has seen
 * `date` (the calendar day); `week` (ISO week, starting Monday), `month` and `year` are sandbox
 * extensions so that a tile can group by month.
 */
export const DATE_FUNCTIONS = ['date', 'week', 'month', 'year'] as const;

const DAY_MS = 86_400_000;

export function dateBucket(name: string): (ms: number) => number {
  switch (name) {
    case 'date':
      return (ms) => Math.floor(ms / DAY_MS) * DAY_MS;
    case 'week':
      return (ms) => {
        const day = Math.floor(ms / DAY_MS) * DAY_MS;
        const weekday = (new Date(day).getUTCDay() + 6) % 7; // Monday = 0
        return day - weekday * DAY_MS;
      };
    case 'month':
      return (ms) => {
        const d = new Date(ms);
        return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
      };
    case 'year':
      return (ms) => Date.UTC(new Date(ms).getUTCFullYear(), 0, 1);
    default:
      throw new QueryError(`unsupported function '${name}'; the sandbox knows ${DATE_FUNCTIONS.join(', ')}`);
  }
}
