import { QueryError } from './query-error.js';
import { relativeWindow } from './relative-window.js';
import type { Value, ValueType } from './values.js';

export const OPERATORS = ['in', 'ct', 'gt', 'rw'] as const;

export interface FilterSpec {
  operator: string;
  values: readonly string[];
}

export type Predicate = (value: Value) => boolean;

/**
 * A filter becomes a predicate over one item's value. Operands are strings in the spec; they are
 * read according to the item's type. A null value never passes any filter (as in SQL, where
 * `NULL IN (...)` and `NULL > x` are not true).
 */
export function compileFilter(filter: FilterSpec, type: ValueType, now: number): Predicate {
  const { operator, values } = filter;
  switch (operator) {
    case 'in': {
      // Exact match, case-sensitive: the spec shows status values in upper and lower case, so case carries meaning.
      if (type === 'text') {
        const allowed = new Set(values);
        return (v) => typeof v === 'string' && allowed.has(v);
      }
      const allowed = new Set(values.map((operand) => (type === 'number' ? parseNumber(operand, 'in') : parseInstant(operand, 'in'))));
      return (v) => typeof v === 'number' && allowed.has(v);
    }
    case 'ct': {
      // Contains, case-insensitive; any operand may match.
      const needles = values.map((operand) => operand.toLowerCase());
      const asText = type === 'datetime' ? (v: number | string) => new Date(v).toISOString() : (v: number | string) => String(v);
      return (v) => {
        if (v === null) return false;
        const haystack = asText(v).toLowerCase();
        return needles.some((needle) => haystack.includes(needle));
      };
    }
    case 'gt': {
      if (values.length !== 1) throw new QueryError(`gt needs exactly one operand, got ${JSON.stringify(values)}`);
      const operand = values[0]!;
      if (type === 'text') return (v) => typeof v === 'string' && v > operand;
      const bound = type === 'number' ? parseNumber(operand, 'gt') : parseInstant(operand, 'gt');
      return (v) => typeof v === 'number' && v > bound;
    }
    case 'rw': {
      if (type !== 'datetime') throw new QueryError(`rw (relative window) applies to datetime values, not ${type}`);
      const { start, end } = relativeWindow(values, now);
      return (v) => typeof v === 'number' && v >= start && v < end;
    }
    default:
      throw new QueryError(`unsupported filter operator '${operator}'; the sandbox knows ${OPERATORS.join(', ')}`);
  }
}

function parseNumber(operand: string, operator: string): number {
  const n = operand.trim() === '' ? Number.NaN : Number(operand);
  if (!Number.isFinite(n)) throw new QueryError(`${operator} operand '${operand}' is not a number`);
  return n;
}

/** Epoch ms as digits, or anything Date.parse reads (ISO 8601 preferred). */
function parseInstant(operand: string, operator: string): number {
  const trimmed = operand.trim();
  const ms = /^-?\d+$/.test(trimmed) ? Number(trimmed) : Date.parse(trimmed);
  if (!Number.isFinite(ms)) throw new QueryError(`${operator} operand '${operand}' is not a datetime (epoch ms or ISO 8601)`);
  return ms;
}
