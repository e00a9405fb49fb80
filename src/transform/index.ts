/** The transform layer's public surface: export page → typed columns and rows. */
export { calendarDateIn, daysFromCivil, formatCivilDate, MAX_EPOCH_MS, MIN_EPOCH_MS, MS_PER_DAY } from './calendar.js';
export { type Column, type TypedRow, type TypedValue } from './column.js';
export { MAX_COLUMN_NAME_LENGTH, toColumnNames } from './column-names.js';
export { type ColumnMapping, type ColumnOverrides, numberTextColumns, toColumns } from './columns.js';
export { type TypedRows, type TypedRowsOptions, toTypedRows } from './typed-rows.js';
export {
  ColumnCountMismatchError,
  ColumnOverrideInvalidError,
  type RowLocation,
  ValueInvalidError,
} from './transform-errors.js';
export { parseDate } from './values/parse-date.js';
export { parseFloat64 } from './values/parse-float64.js';
export { parseInt64 } from './values/parse-int64.js';
export { parseNumeric } from './values/parse-numeric.js';
export { parseString } from './values/parse-string.js';
export { parseTimestamp } from './values/parse-timestamp.js';
export { isValueFailure, ValueFailure } from './values/value-failure.js';
export { parserFor, type ValueParser } from './values/value-parser.js';
