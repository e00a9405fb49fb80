import { QueryError } from './query-error.js';

export type Token =
  | { kind: 'number'; value: number; position: number }
  | { kind: 'string'; value: string; position: number }
  | { kind: 'field'; entity: string; field: string; position: number }
  | { kind: 'ref'; ref: string; position: number }
  | { kind: 'identifier'; name: string; position: number }
  | { kind: 'punctuation'; symbol: '(' | ')' | ',' | '+' | '-' | '*' | '/'; position: number }
  | { kind: 'end'; position: number };

const FIELD_REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$/;
const NUMBER = /\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?/y;
const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;

/**
 * Splits a formula into tokens. Positions are 0-based character offsets, reported in errors so
 * a job author can find the mistake in a long formula.
 */
export function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '[') {
      const close = source.indexOf(']', i);
      if (close < 0) throw syntaxError(source, i, "'[' is never closed");
      const inner = source.slice(i + 1, close).trim();
      if (inner.startsWith('ref:')) {
        const ref = inner.slice(4).trim();
        if (ref === '') throw syntaxError(source, i, '[ref:] names no item');
        tokens.push({ kind: 'ref', ref, position: i });
      } else {
        const match = FIELD_REFERENCE.exec(inner);
        if (!match) throw syntaxError(source, i, `[${inner}] is neither [entity.field] nor [ref:name]`);
        tokens.push({ kind: 'field', entity: match[1]!, field: match[2]!, position: i });
      }
      i = close + 1;
    } else if (c === "'" || c === '"') {
      const start = i;
      let value = '';
      i++;
      for (;;) {
        if (i >= source.length) throw syntaxError(source, start, 'string literal is never closed');
        const s = source[i]!;
        if (s === '\\' && i + 1 < source.length) {
          value += source[i + 1];
          i += 2;
        } else if (s === c) {
          i++;
          break;
        } else {
          value += s;
          i++;
        }
      }
      tokens.push({ kind: 'string', value, position: start });
    } else if (/[\d.]/.test(c)) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(source);
      if (!match) throw syntaxError(source, i, `unexpected '${c}'`);
      tokens.push({ kind: 'number', value: Number(match[0]), position: i });
      i += match[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      IDENTIFIER.lastIndex = i;
      const name = IDENTIFIER.exec(source)![0];
      tokens.push({ kind: 'identifier', name, position: i });
      i += name.length;
    } else if ('(),+-*/'.includes(c)) {
      tokens.push({ kind: 'punctuation', symbol: c as '(' | ')' | ',' | '+' | '-' | '*' | '/', position: i });
      i++;
    } else {
      throw syntaxError(source, i, `unexpected '${c}'`);
    }
  }
  tokens.push({ kind: 'end', position: source.length });
  return tokens;
}

export function syntaxError(source: string, position: number, problem: string): QueryError {
  return new QueryError(`${problem} at position ${position} of formula '${source}'`);
}
