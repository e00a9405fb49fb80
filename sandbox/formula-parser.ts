import { syntaxError, tokenize, type Token } from './formula-tokenizer.js';

export type BinaryOperator = '+' | '-' | '*' | '/';

export type Expression =
  | { kind: 'number'; value: number }
  | { kind: 'string'; value: string }
  | { kind: 'field'; entity: string; field: string; position: number }
  | { kind: 'ref'; ref: string; position: number }
  | { kind: 'call'; name: string; args: Expression[]; position: number }
  | { kind: 'negate'; operand: Expression; position: number }
  | { kind: 'binary'; operator: BinaryOperator; left: Expression; right: Expression; position: number };

/**
 * Recursive descent over the grammar below; `*` and `/` bind tighter than `+` and `-`, both
 * left-associative, as in every spreadsheet:
 *
 *   expression := term (('+' | '-') term)*
 *   term       := unary (('*' | '/') unary)*
 *   unary      := ('-' | '+') unary | primary
 *   primary    := number | string | [entity.field] | [ref:name] | name '(' arguments? ')' | '(' expression ')'
 */
export function parseFormula(source: string): Expression {
  const tokens = tokenize(source);
  let index = 0;
  const peek = (): Token => tokens[index]!;
  const next = (): Token => tokens[index++]!;
  const isSymbol = (token: Token, symbol: string): boolean => token.kind === 'punctuation' && token.symbol === symbol;
  const describe = (token: Token): string => {
    switch (token.kind) {
      case 'end':
        return 'the end of the formula';
      case 'number':
        return `'${token.value}'`;
      case 'string':
        return `the string '${token.value}'`;
      case 'field':
        return `[${token.entity}.${token.field}]`;
      case 'ref':
        return `[ref:${token.ref}]`;
      case 'identifier':
        return `'${token.name}'`;
      case 'punctuation':
        return `'${token.symbol}'`;
    }
  };
  const expect = (symbol: string): void => {
    const token = next();
    if (!isSymbol(token, symbol)) throw syntaxError(source, token.position, `expected '${symbol}' but found ${describe(token)}`);
  };

  function expression(): Expression {
    let left = term();
    for (let token = peek(); isSymbol(token, '+') || isSymbol(token, '-'); token = peek()) {
      next();
      const operator = (token as { symbol: BinaryOperator }).symbol;
      left = { kind: 'binary', operator, left, right: term(), position: token.position };
    }
    return left;
  }

  function term(): Expression {
    let left = unary();
    for (let token = peek(); isSymbol(token, '*') || isSymbol(token, '/'); token = peek()) {
      next();
      const operator = (token as { symbol: BinaryOperator }).symbol;
      left = { kind: 'binary', operator, left, right: unary(), position: token.position };
    }
    return left;
  }

  function unary(): Expression {
    const token = peek();
    if (isSymbol(token, '-')) {
      next();
      return { kind: 'negate', operand: unary(), position: token.position };
    }
    if (isSymbol(token, '+')) {
      next();
      return unary();
    }
    return primary();
  }

  function primary(): Expression {
    const token = next();
    switch (token.kind) {
      case 'number':
        return { kind: 'number', value: token.value };
      case 'string':
        return { kind: 'string', value: token.value };
      case 'field':
        return { kind: 'field', entity: token.entity, field: token.field, position: token.position };
      case 'ref':
        return { kind: 'ref', ref: token.ref, position: token.position };
      case 'identifier': {
        if (!isSymbol(peek(), '(')) {
          throw syntaxError(source, token.position, `'${token.name}' is not a value; fields are written [entity.field], functions name(...)`);
        }
        next();
        const args: Expression[] = [];
        if (!isSymbol(peek(), ')')) {
          args.push(expression());
          while (isSymbol(peek(), ',')) {
            next();
            args.push(expression());
          }
        }
        expect(')');
        return { kind: 'call', name: token.name.toLowerCase(), args, position: token.position };
      }
      case 'punctuation':
        if (token.symbol === '(') {
          const inner = expression();
          expect(')');
          return inner;
        }
        throw syntaxError(source, token.position, `unexpected '${token.symbol}'`);
      case 'end':
        throw syntaxError(source, token.position, 'formula ends too early');
    }
  }

  const result = expression();
  const rest = peek();
  if (rest.kind !== 'end') throw syntaxError(source, rest.position, `unexpected ${describe(rest)} after a complete expression`);
  return result;
}

/** Whether the expression reads a field directly (not through a ref). */
export function readsFields(expression: Expression): boolean {
  switch (expression.kind) {
    case 'field':
      return true;
    case 'call':
      return expression.args.some(readsFields);
    case 'negate':
      return readsFields(expression.operand);
    case 'binary':
      return readsFields(expression.left) || readsFields(expression.right);
    default:
      return false;
  }
}
