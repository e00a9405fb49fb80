import type { Expression } from './formula-parser.js';
import { QueryError } from './query-error.js';
import type { Value, ValueType } from './values.js';

/** A type-checked formula, ready to run against a context (a row id, or a group index). */
export interface Compiled<C> {
  readonly type: ValueType;
  readonly evaluate: (context: C) => Value;
}

/** How leaves resolve; the evaluator decides what a field or a ref means at each level. */
export interface Resolver<C> {
  field(entity: string, field: string): Compiled<C>;
  ref(ref: string): Compiled<C>;
}

export const FUNCTIONS = ['round', 'concat'] as const;

/**
 * Types are checked once, when the query is compiled, so a bad formula is a 400 naming the problem
 * instead of a column of nulls. At run time a null operand makes the result null (SQL-like), and
 * so does a result that is not a finite number (division by zero).
 */
export function compileExpression<C>(expression: Expression, resolver: Resolver<C>): Compiled<C> {
  switch (expression.kind) {
    case 'number': {
      const value = expression.value;
      return { type: 'number', evaluate: () => value };
    }
    case 'string': {
      const value = expression.value;
      return { type: 'text', evaluate: () => value };
    }
    case 'field':
      return resolver.field(expression.entity, expression.field);
    case 'ref':
      return resolver.ref(expression.ref);
    case 'negate': {
      const operand = compileExpression(expression.operand, resolver);
      if (operand.type !== 'number') throw new QueryError(`unary '-' needs a number, got ${operand.type}`);
      return { type: 'number', evaluate: (c) => negate(operand.evaluate(c)) };
    }
    case 'binary':
      return compileBinary(expression.operator, compileExpression(expression.left, resolver), compileExpression(expression.right, resolver));
    case 'call':
      return compileCall(
        expression.name,
        expression.args.map((arg) => compileExpression(arg, resolver)),
      );
  }
}

function compileBinary<C>(operator: '+' | '-' | '*' | '/', left: Compiled<C>, right: Compiled<C>): Compiled<C> {
  const l = left.evaluate;
  const r = right.evaluate;
  if (left.type === 'text' || right.type === 'text') {
    throw new QueryError(`'${operator}' does not apply to text${operator === '+' ? '; join text with concat(a, b, ...)' : ''}`);
  }
  let type: ValueType = 'number';
  if (left.type === 'datetime' || right.type === 'datetime') {
    // Datetimes are epoch ms: shifting one by a number of ms is a datetime, the gap between two is ms.
    if (operator === '+' && !(left.type === 'datetime' && right.type === 'datetime')) type = 'datetime';
    else if (operator === '-' && left.type === 'datetime' && right.type === 'number') type = 'datetime';
    else if (operator === '-' && left.type === 'datetime' && right.type === 'datetime') type = 'number';
    else throw new QueryError(`'${operator}' does not apply to ${left.type} and ${right.type}`);
  }
  const apply = ARITHMETIC[operator];
  return {
    type,
    evaluate: (c) => {
      const a = l(c);
      const b = r(c);
      if (typeof a !== 'number' || typeof b !== 'number') return null;
      const result = apply(a, b);
      return Number.isFinite(result) ? result : null;
    },
  };
}

const ARITHMETIC = {
  '+': (a: number, b: number) => a + b,
  '-': (a: number, b: number) => a - b,
  '*': (a: number, b: number) => a * b,
  '/': (a: number, b: number) => a / b,
} as const;

function negate(value: Value): Value {
  return typeof value === 'number' ? (value === 0 ? 0 : -value) : null;
}

function compileCall<C>(name: string, args: Compiled<C>[]): Compiled<C> {
  switch (name) {
    case 'round': {
      if (args.length < 1 || args.length > 2) throw new QueryError(`round takes 1 or 2 arguments (value, digits), got ${args.length}`);
      const [value, digits] = args as [Compiled<C>, Compiled<C> | undefined];
      if (value.type !== 'number') throw new QueryError(`round needs a number, got ${value.type}`);
      if (digits && digits.type !== 'number') throw new QueryError(`round's digits must be a number, got ${digits.type}`);
      return {
        type: 'number',
        evaluate: (c) => {
          const v = value.evaluate(c);
          const d = digits ? digits.evaluate(c) : 0;
          return typeof v === 'number' && typeof d === 'number' ? roundHalfAwayFromZero(v, d) : null;
        },
      };
    }
    case 'concat': {
      if (args.length === 0) throw new QueryError('concat needs at least one argument');
      const parts = args.map((arg) => {
        const evaluate = arg.evaluate;
        return arg.type === 'datetime'
          ? (c: C) => {
              const v = evaluate(c);
              return typeof v === 'number' ? new Date(v).toISOString() : '';
            }
          : (c: C) => {
              const v = evaluate(c);
              return v === null ? '' : String(v);
            };
      });
      return { type: 'text', evaluate: (c) => parts.map((part) => part(c)).join('') };
    }
    default:
      throw new QueryError(`unknown function '${name}'; the sandbox knows ${FUNCTIONS.join(', ')}`);
  }
}

/**
 * Rounds half away from zero (2.5 → 3, -2.5 → -3), like spreadsheets and most SQL engines, on the
 * decimal representation so that round(1.005, 2) is 1.01 and not 0.99999...-induced 1.
 */
export function roundHalfAwayFromZero(value: number, digits: number): number | null {
  if (!Number.isFinite(value) || !Number.isFinite(digits)) return null;
  const d = Math.trunc(digits);
  const magnitude = Math.abs(value);
  const text = String(magnitude);
  let rounded: number;
  if (text.includes('e')) {
    const factor = 10 ** d;
    rounded = Math.round(magnitude * factor) / factor;
  } else {
    rounded = Number(`${Math.round(Number(`${text}e${d}`))}e${-d}`);
  }
  const result = Math.sign(value) * rounded;
  return result === 0 ? 0 : result;
}
