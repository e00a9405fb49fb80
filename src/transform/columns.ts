import type { Column } from './column.js';
import { toColumnNames } from './column-names.js';
import { ColumnCountMismatchError, ColumnOverrideInvalidError } from './transform-errors.js';
import { COLUMN_TYPES, type ColumnType, OVERRIDE_TYPES } from '../value-types/column-types.js';

/** The job's `columns` section: per-header type overrides. */
export type ColumnOverrides = Readonly<Record<string, { type: ColumnType }>>;

export interface ColumnMapping {
  columns: Column[];
  /** Human-readable notes for the run summary (e.g. an unknown dataType loaded as STRING). */
  warnings: string[];
}

/**
 * Each API dataType's default column type. The types it may be overridden to are the
 * rule in value-types/column-types.ts (OVERRIDE_TYPES), checked by config at load time and here again for a response:
 * `number` allows INT64/NUMERIC because the API does not say whether a number is whole or exact;
 * `datetime` allows DATE for day-level tiles. Reading text as a number, or a number as a date, is
 * a modelling mistake the configuration should not be able to hide.
 */
const DEFAULT_TYPES: ReadonlyMap<string, ColumnType> = new Map([
  ['number', 'FLOAT64'],
  ['text', 'STRING'],
  ['datetime', 'TIMESTAMP'],
]);

function ruleFor(dataType: string): { default: ColumnType; allowed: readonly ColumnType[] } | undefined {
  const key = dataType.trim().toLowerCase();
  const defaultType = DEFAULT_TYPES.get(key);
  return defaultType === undefined ? undefined : { default: defaultType, allowed: OVERRIDE_TYPES[key] ?? [defaultType] };
}

/**
 * Typed columns for an export's `headers` and `dataTypes`, applying the job's overrides.
 *
 * A dataType the spec has not shown us becomes STRING with a warning rather than an error: the
 * STRING parser accepts any scalar, so the data still arrives and someone can pick a type. An
 * override on such a column is trusted as is — the job's author knows more than we do.
 */
export function toColumns(headers: readonly string[], dataTypes: readonly string[], overrides: ColumnOverrides): ColumnMapping {
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
    const rule = ruleFor(sourceDataType);
    const override = Object.hasOwn(overrides, header) ? overrides[header] : undefined;
    let type: ColumnType;
    if (override !== undefined) {
      if (!(COLUMN_TYPES as readonly string[]).includes(override.type)) {
        throw new ColumnOverrideInvalidError(header, sourceDataType, override.type, `${override.type} is not a column type`);
      }
      if (rule !== undefined && !rule.allowed.includes(override.type)) {
        throw new ColumnOverrideInvalidError(header, sourceDataType, override.type, `allowed: ${rule.allowed.join(', ')}`);
      }
      if (rule === undefined) {
        warnings.push(`column "${header}": unknown dataType ${JSON.stringify(sourceDataType)}, loaded as ${override.type} as configured`);
      }
      type = override.type;
    } else if (rule !== undefined) {
      type = rule.default;
    } else {
      type = 'STRING';
      warnings.push(
        `column "${header}": unknown dataType ${JSON.stringify(sourceDataType)}, loaded as STRING; ` + 'set a type under `columns` in the job to change that',
      );
    }
    return { name: names[index] ?? `column_${index + 1}`, header, type, sourceDataType };
  });
  return { columns, warnings };
}

/**
 * The columns (by index) whose typed value can depend on a JSON number's exact text: INT64 and
 * NUMERIC keep every digit, STRING keeps the literal as written. FLOAT64 takes the nearest double,
 * and TIMESTAMP and DATE read epoch milliseconds as a double (epoch-input.ts), whatever the digits.
 * The source reads a page exactly only when one of these columns holds a number
 * (readExactPageWhen). Undefined when the export's columns do not map (the run fails on them
 * anyway): then every column counts.
 */
export function numberTextColumns(headers: readonly string[], dataTypes: readonly string[], overrides: ColumnOverrides): number[] | undefined {
  let columns: Column[];
  try {
    ({ columns } = toColumns(headers, dataTypes, overrides));
  } catch {
    return undefined;
  }
  return columns.flatMap((column, index) => (column.type === 'INT64' || column.type === 'NUMERIC' || column.type === 'STRING' ? [index] : []));
}
