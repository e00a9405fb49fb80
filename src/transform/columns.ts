import { type Column, COLUMN_TYPES, type ColumnType } from './column.js';
import { toColumnNames } from './column-names.js';
import { ColumnCountMismatchError, ColumnOverrideInvalidError } from './transform-errors.js';

/** The job's `columns` section: per-header type overrides. */
export type ColumnOverrides = Readonly<Record<string, { type: ColumnType }>>;

export interface ColumnMapping {
  columns: Column[];
  /** Human-readable notes for the run summary (e.g. an unknown dataType loaded as STRING). */
  warnings: string[];
}

/**
 * Each API dataType, its default column type and the types it may be overridden to. `number`
 * allows INT64/NUMERIC because the API does not say whether a number is whole or exact; `datetime`
 * allows DATE for day-level tiles. Nothing else is allowed: reading text as a number, or a number
 * as a date, is a modelling mistake the configuration should not be able to hide.
 */
const DATA_TYPES: ReadonlyMap<string, { default: ColumnType; allowed: readonly ColumnType[] }> = new Map([
  ['number', { default: 'FLOAT64', allowed: ['FLOAT64', 'INT64', 'NUMERIC'] }],
  ['text', { default: 'STRING', allowed: ['STRING'] }],
  ['datetime', { default: 'TIMESTAMP', allowed: ['TIMESTAMP', 'DATE'] }],
]);

/**
 * Typed columns for an export's `headers` and `dataTypes`, applying the job's overrides.
 *
 * A dataType the spec has not shown us becomes STRING with a warning rather than an error: the
 * STRING parser accepts any scalar, so the data still arrives and someone can pick a type. An
 * override on such a column is trusted as is — the job's author knows more than we do.
 */
export function toColumns(
  headers: readonly string[],
  dataTypes: readonly string[],
  overrides: ColumnOverrides,
): ColumnMapping {
  if (headers.length !== dataTypes.length) throw new ColumnCountMismatchError(headers.length, dataTypes.length);

  const known = new Set(headers);
  for (const [header, override] of Object.entries(overrides)) {
    if (!known.has(header)) {
      throw new ColumnOverrideInvalidError(
        header,
        undefined,
        override.type,
        `the export has no such header (headers: ${headers.map((h) => JSON.stringify(h)).join(', ')})`,
      );
    }
  }

  const names = toColumnNames(headers);
  const warnings: string[] = [];
  const columns = headers.map((header, index): Column => {
    const sourceDataType = dataTypes[index] ?? '';
    const rule = DATA_TYPES.get(sourceDataType.trim().toLowerCase());
    const override = Object.hasOwn(overrides, header) ? overrides[header] : undefined;
    let type: ColumnType;
    if (override !== undefined) {
      if (!(COLUMN_TYPES as readonly string[]).includes(override.type)) {
        throw new ColumnOverrideInvalidError(header, sourceDataType, override.type, `${override.type} is not a column type`);
      }
      if (rule !== undefined && !rule.allowed.includes(override.type)) {
        throw new ColumnOverrideInvalidError(
          header,
          sourceDataType,
          override.type,
          `allowed: ${rule.allowed.join(', ')}`,
        );
      }
      if (rule === undefined) {
        warnings.push(
          `column "${header}": unknown dataType ${JSON.stringify(sourceDataType)}, loaded as ${override.type} as configured`,
        );
      }
      type = override.type;
    } else if (rule !== undefined) {
      type = rule.default;
    } else {
      type = 'STRING';
      warnings.push(
        `column "${header}": unknown dataType ${JSON.stringify(sourceDataType)}, loaded as STRING; ` +
          'set a type under `columns` in the job to change that',
      );
    }
    return { name: names[index] ?? `column_${index + 1}`, header, type, sourceDataType };
  });
  return { columns, warnings };
}
