import { QueryError } from './query-error.js';
import type { Value, ValueType } from './values.js';

export const FORMATS = ['year_month_number_day_number_hyphen', 'year_month_number_hyphen', 'percentage', 'incident_url', 'pretty'] as const;

export interface FormatContext {
  /** The tenant host; incident links point at it. */
  audience: string;
}

/**
 * Item `format`s turn a computed value into the text the tile shows. They apply last: filters,
 * ordering, grouping and refs all see the unformatted value (so a percentage column still sorts
 * numerically and a date column chronologically). A formatted cell is a string, or null for null.
 */
export function compileFormat(format: string, type: ValueType, context: FormatContext): (value: Value) => string | null {
  switch (format) {
    case 'year_month_number_day_number_hyphen':
      requireType(format, type, 'datetime');
      return (v) => (typeof v === 'number' ? new Date(v).toISOString().slice(0, 10) : null);
    case 'year_month_number_hyphen':
      // Sandbox extension, by analogy with the name above: "YYYY-MM".
      requireType(format, type, 'datetime');
      return (v) => (typeof v === 'number' ? new Date(v).toISOString().slice(0, 7) : null);
    case 'percentage':
      // The value is already in percent (the tiles multiply by 100 in the formula); at most 2 decimals.
      requireType(format, type, 'number');
      return (v) => (typeof v === 'number' ? `${trimDecimals(v)}%` : null);
    case 'incident_url':
      if (type === 'datetime') throw new QueryError(`format incident_url needs an incident number, got a datetime`);
      return (v) => (v === null || v === '' ? null : `https://${context.audience}/incidents/${encodeURIComponent(String(v))}`);
    case 'pretty':
      return prettyFor(type);
    default:
      throw new QueryError(`unsupported format '${format}'; the sandbox knows ${FORMATS.join(', ')}`);
  }
}

function requireType(format: string, actual: ValueType, expected: ValueType): void {
  if (actual !== expected) throw new QueryError(`format ${format} needs a ${expected} value, got ${actual}`);
}

function trimDecimals(value: number): string {
  const rounded = Number(value.toFixed(2));
  return String(rounded === 0 ? 0 : rounded);
}

const PRETTY_NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });

/**
 * `pretty` is for people, not machines: numbers get thousands separators ("1,234.5"), datetimes
 * read "2026-06-30 14:05 UTC", and enum-like text ("INVESTIGATING", "config_change") becomes a
 * sentence-case phrase ("Investigating", "Config change"). Other text is left alone.
 */
function prettyFor(type: ValueType): (value: Value) => string | null {
  switch (type) {
    case 'number':
      return (v) => (typeof v === 'number' ? PRETTY_NUMBER.format(v) : null);
    case 'datetime':
      return (v) => (typeof v === 'number' ? `${new Date(v).toISOString().slice(0, 16).replace('T', ' ')} UTC` : null);
    case 'text':
      return (v) => {
        if (v === null) return null;
        const text = String(v);
        if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(text)) return text;
        // Shouting enum values are lowered; codes with digits ("SEV1") keep their case.
        const cased = /^[A-Z_]+$/.test(text) ? text.toLowerCase() : text;
        const words = cased.replace(/_+/g, ' ').trim();
        return words.charAt(0).toUpperCase() + words.slice(1);
      };
  }
}
