/**
 * The column types of a tile's table inside tilehouse, and which of them each of the API's
 * dataTypes may be read as. Configuration checks a job's `columns` overrides against this rule at
 * load time and transform checks them again against a response, so it lives below both.
 */
export const COLUMN_TYPES = ['FLOAT64', 'INT64', 'NUMERIC', 'STRING', 'TIMESTAMP', 'DATE'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

/**
 * The column types each of the API's dataTypes may be overridden to: a number may be read as a
 * whole or exact number, a datetime as a day; text stays text. An unknown dataType accepts any type
 * (its author knows more).
 */
export const OVERRIDE_TYPES: Readonly<Record<string, readonly ColumnType[]>> = {
  number: ['FLOAT64', 'INT64', 'NUMERIC'],
  text: ['STRING'],
  datetime: ['TIMESTAMP', 'DATE'],
};
