/**
 * What the layers above ask of transform by name: the day of an instant in a zone, the columns
 * whose numbers must be read losslessly, and the two value parsers the windows and the window
 * state reuse. The rest of transform is imported from its own files (`columns.ts`, `typed-rows.ts`,
 * `column.ts`); an export nobody imports here fails `npm run lint` (knip).
 */
export { calendarDateIn } from './calendar.js';
export { numberTextColumns } from './columns.js';
export { parseDate } from './values/parse-date.js';
export { parseTimestamp } from './values/parse-timestamp.js';
export { isValueFailure } from './values/value-failure.js';
