/**
 * The three data types of the spec's query items. Datetimes travel inside the evaluator as epoch
 * milliseconds (numbers); the static type is what tells them apart from plain numbers.
 */
export const VALUE_TYPES = ['number', 'text', 'datetime'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

/** One cell while a query is evaluated. `null` is a missing value (e.g. an empty postmortem field). */
export type Value = number | string | null;
