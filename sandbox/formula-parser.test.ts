import { describe, expect, it } from 'vitest';
import { parseFormula, readsFields, type Expression } from './formula-parser.js';
import { tokenize } from './formula-tokenizer.js';

/** The expression as a fully parenthesised string, to make precedence visible. */
function show(expression: Expression): string {
  switch (expression.kind) {
    case 'number':
      return String(expression.value);
    case 'string':
      return JSON.stringify(expression.value);
    case 'field':
      return `[${expression.entity}.${expression.field}]`;
    case 'ref':
      return `[ref:${expression.ref}]`;
    case 'negate':
      return `(-${show(expression.operand)})`;
    case 'binary':
      return `(${show(expression.left)} ${expression.operator} ${show(expression.right)})`;
    case 'call':
      return `${expression.name}(${expression.args.map(show).join(', ')})`;
  }
}

describe('parseFormula', () => {
  it.each([
    ['1 + 2 * 3', '(1 + (2 * 3))'],
    ['(1 + 2) * 3', '((1 + 2) * 3)'],
    ['10 - 4 - 3', '((10 - 4) - 3)'],
    ['8 / 4 / 2', '((8 / 4) / 2)'],
    ['-[incident.severity] * 2', '((-[incident.severity]) * 2)'],
    ['2 * -3', '(2 * (-3))'],
    ['+5', '5'],
    ['round([ref:resolved] / [ref:count] * 100)', 'round((([ref:resolved] / [ref:count]) * 100))'],
    ['ROUND(1.5, 1)', 'round(1.5, 1)'],
    ["concat([tag.label], ' / ', [incident.type])", 'concat([tag.label], " / ", [incident.type])'],
    ['concat("say \\"hi\\"")', 'concat("say \\"hi\\"")'],
    ['[ ref: total ]', '[ref:total]'],
    ['.5 + 1e3 + 2.25', '((0.5 + 1000) + 2.25)'],
  ])('parses %s as %s', (formula, expected) => {
    expect(show(parseFormula(formula))).toBe(expected);
  });

  it.each([
    ['round([incident.number]', "expected ')' but found the end of the formula at position 23"],
    ['1 +', 'formula ends too early at position 3'],
    ['[incident.number] [incident.status]', 'unexpected [incident.status] after a complete expression at position 18'],
    ['[incident]', '[incident] is neither [entity.field] nor [ref:name] at position 0'],
    ['[incident.number', "'[' is never closed at position 0"],
    ['count', "'count' is not a value"],
    ["concat('open", 'string literal is never closed at position 7'],
    ['1 % 2', "unexpected '%' at position 2"],
    ['[ref:]', '[ref:] names no item'],
    ['()', "unexpected ')' at position 1"],
  ])('refuses %s with a located message', (formula, message) => {
    expect(() => parseFormula(formula)).toThrow(message);
  });

  it('names the formula in its errors', () => {
    expect(() => parseFormula('1 +')).toThrow("of formula '1 +'");
  });

  it('tells a direct field read from a read through a ref', () => {
    expect(readsFields(parseFormula('round([incident.severity] * 2)'))).toBe(true);
    expect(readsFields(parseFormula('round([ref:a] / [ref:b] * 100)'))).toBe(false);
  });
});

describe('tokenize', () => {
  it('reports each token with its position', () => {
    expect(tokenize('[ref:a] * 2').map((t) => [t.kind, t.position])).toEqual([
      ['ref', 0],
      ['punctuation', 8],
      ['number', 10],
      ['end', 11],
    ]);
  });
});
