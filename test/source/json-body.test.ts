import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isInexactLiteral, mayHoldInexactNumber, parseJsonBody, parseJsonBytes, readLosslessJson, SLICE_BYTES } from '../../src/source/json-body.js';
import { ExactNumber } from '../../src/value-types/exact-number.js';
import { formatDecimal, parseDecimal } from '../../src/transform/values/decimal.js';

function parsed(text: string): unknown {
  const result = parseJsonBody(text);
  if (!result.ok) throw new Error(`expected JSON, got: ${result.error}`);
  return result.value;
}

/** Replaces every ExactNumber by Number(text): what JSON.parse would have given. */
function rounded(value: unknown): unknown {
  if (value instanceof ExactNumber) return Number(value.text);
  if (Array.isArray(value)) return value.map(rounded);
  if (value !== null && typeof value === 'object') {
    const copy: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value))
      Object.defineProperty(copy, key, { value: rounded(member), enumerable: true, writable: true, configurable: true });
    return copy;
  }
  return value;
}

/** JSON number literals of every shape: short and long mantissas, fractions, exponents of any size. */
const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
const numberLiteral = fc
  .tuple(
    fc.boolean(),
    fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.constantFrom(...'123456789'), digits(0, 40)).map(([first, rest]) => first + rest),
    ),
    fc.option(digits(1, 40), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.oneof(digits(1, 2), digits(3, 4))), { nil: undefined }),
  )
  .map(([negative, whole, fraction, exponent]) => `${negative ? '-' : ''}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent?.join('') ?? ''}`);

/** Independent oracle: does the double keep the literal's value (and, for plain integers, is it safe)? */
function keptByDouble(literal: string): boolean {
  const value = Number(literal);
  if (!Number.isFinite(value)) return false;
  if (/^-?\d+$/.test(literal)) return BigInt(literal) === BigInt(value) && Number.isSafeInteger(value);
  return formatDecimal(parseDecimal(literal)!) === formatDecimal(parseDecimal(String(value))!);
}

describe('parseJsonBody', () => {
  it('keeps an ordinary page as JSON.parse reads it, through JSON.parse (no long literal)', () => {
    const text = '{"ok":true,"result":{"rows":[[1,-2.5,"INC-1",{"$date":1706743800000},null,true,0.1,1e21,-0]]}}';
    expect(mayHoldInexactNumber(text)).toBe(false);
    expect(parsed(text)).toEqual(JSON.parse(text));
    expect(Object.is((parsed(text) as { result: { rows: number[][] } }).result.rows[0]![8], -0)).toBe(true);
  });

  it.each([
    ['[0.30000000000000004, -1.2345678901234567e-200, 9007199254740991]', 'JavaScript-written doubles and safe integers'],
    ['["3f9e1234-aa", "id 1e400x", "2024-01-15T10:00:00.000Z", "12345678901234567890"]', 'hex ids, words, timestamps, digit ids in strings'],
  ])('keeps the JSON.parse path for %s (%s)', (text) => {
    expect(mayHoldInexactNumber(text)).toBe(false);
  });

  it.each(['[1e400]', '1e400', '[12345678901234567.5]', '{"a":9007199254740992}', '[-1.0000000000000000000001e-5]', '["a", 1E-0400 ]'])(
    'takes the lossless path for %s',
    (text) => {
      expect(mayHoldInexactNumber(text)).toBe(true);
    },
  );

  it('keeps a literal beyond double precision exact, and the others plain numbers', () => {
    const value = parsed('{"rows":[[12345678901234567.5, 7, -98765432109876543210, 9007199254740993, 9007199254740991, 1.5]]}');
    expect(value).toEqual({
      rows: [[new ExactNumber('12345678901234567.5'), 7, new ExactNumber('-98765432109876543210'), new ExactNumber('9007199254740993'), 9007199254740991, 1.5]],
    });
  });

  it.each([
    ['1e400', 'overflows to Infinity'],
    ['-1E+400', 'overflows to -Infinity'],
    ['1e-400', 'underflows to 0'],
    ['4.9406564584124654e-324', 'is a subnormal with fewer bits'],
    ['0.1000000000000000000000000001', 'has 28 significant digits'],
    ['10000000000000000000', 'is an integer beyond 2^53, even a round one'],
    ['9007199254740992', 'is 2^53, which its neighbour shares'],
    ['-9007199254740993', 'is a negative integer beyond 2^53'],
  ])('keeps %s exact: it %s as a double', (literal) => {
    expect(parsed(`[${literal}]`)).toEqual([new ExactNumber(literal)]);
    expect(parsed(literal)).toEqual(new ExactNumber(literal));
  });

  it.each([
    ['0.30000000000000004', 0.30000000000000004],
    ['1.5000000000000000000000', 1.5],
    ['123456789012345.0000000000', 123456789012345],
    ['1e22', 1e22],
    ['1.5e-300', 1.5e-300],
    ['-0.00000000000000000000', -0],
    ['-0', -0],
    ['9007199254740991', 9007199254740991],
  ])('reads %s as the plain number %s: the double holds it as written', (literal, number) => {
    // The second literal sends the page down the lossless path.
    const value = parsed(`[${literal}, 12345678901234567890]`) as unknown[];
    expect(Object.is(value[0], number)).toBe(true);
  });

  it('never touches numbers inside strings, on either path', () => {
    const text = '{"id":"12345678901234567890","price":"1e400","note":"call (0049123456789012345) or 1.2345678901234567","n":[-12345678901234567890]}';
    expect(parsed(text)).toEqual({ ...JSON.parse(text), n: [new ExactNumber('-12345678901234567890')] });
    const fast = text.replace(',"n":[-12345678901234567890]', '');
    expect(mayHoldInexactNumber(fast)).toBe(false);
    expect(parsed(fast)).toEqual(JSON.parse(fast));
  });

  it('reads nested objects and arrays, with exact numbers at any depth', () => {
    expect(parsed('{"a":{"b":[{"c":[[123456789012345678]]}],"d":{"$date":12345678901234567890}}}')).toEqual({
      a: { b: [{ c: [[new ExactNumber('123456789012345678')]] }], d: { $date: new ExactNumber('12345678901234567890') } },
    });
  });

  it('ignores a leading UTF-8 byte-order mark, on both paths', () => {
    expect(parsed('\ufeff{"a":1}')).toEqual({ a: 1 });
    expect(parsed('\ufeff{"a":12345678901234567890}')).toEqual({ a: new ExactNumber('12345678901234567890') });
    expect(parseJsonBody('\ufeff\ufeff{}').ok).toBe(false);
  });

  it('keeps "__proto__" an own member and the last of duplicate keys, as JSON.parse does', () => {
    const text = '{"__proto__":{"x":1},"a":1,"a":12345678901234567890}';
    const value = parsed(text) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'a']);
    expect(value.a).toEqual(new ExactNumber('12345678901234567890'));
  });

  it.each([
    '',
    '{',
    '[1,2',
    '{"a":1,}',
    '[01]',
    '[1.]',
    '[-]',
    '["a\nb", 12345678901234567890]',
    '["\\x", 12345678901234567890]',
    'nul',
    '[1234567890123456789] x',
    '[12345678901234567890',
  ])('refuses malformed JSON %j on both paths', (text) => {
    const result = parseJsonBody(text);
    expect(result.ok).toBe(false);
    expect((result as { error: string }).error).not.toBe('');
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
  });

  it('the lossless reader agrees with JSON.parse on any JSON text (property)', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4 }), (text) => {
        expect(rounded(readLosslessJson(text))).toEqual(JSON.parse(text));
        expect(rounded(parsed(text))).toEqual(JSON.parse(text));
      }),
      { numRuns: 500 },
    );
  });

  it('the lossless reader refuses exactly what JSON.parse refuses (property)', () => {
    const jsonish = fc.string({ unit: fc.constantFrom(...'{}[],:"\\ 0123456789.-+eEtrufalsn\u0001\ud800xu'), maxLength: 20 });
    const mutated = fc.tuple(fc.json({ maxDepth: 2 }), fc.nat(), fc.constantFrom('', ',', '"', '}', ']', '\\', '0', '-', '.')).map(([text, at, insert]) => {
      const index = at % (text.length + 1);
      return text.slice(0, index) + insert + text.slice(index + (insert === '' ? 1 : 0));
    });
    fc.assert(
      fc.property(fc.oneof(jsonish, mutated), (text) => {
        let native: unknown;
        let nativeFailed = false;
        try {
          native = JSON.parse(text);
        } catch {
          nativeFailed = true;
        }
        if (nativeFailed) expect(() => readLosslessJson(text)).toThrow(SyntaxError);
        else expect(rounded(readLosslessJson(text))).toEqual(native);
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps a number exact exactly when a double would change it, and the fast path never misses one (property)', () => {
    fc.assert(
      fc.property(numberLiteral, fc.constantFrom('', ' ', '\n'), (literal, space) => {
        const exact = !keptByDouble(literal);
        expect(isInexactLiteral(literal)).toBe(exact);
        const text = `{"v":[${space}${literal}${space}],"w":${literal}}`;
        const value = parsed(text) as { v: unknown[]; w: unknown };
        if (exact) {
          expect(mayHoldInexactNumber(text)).toBe(true);
          expect(value).toEqual({ v: [new ExactNumber(literal)], w: new ExactNumber(literal) });
        } else {
          expect(Object.is(value.v[0], JSON.parse(literal))).toBe(true);
          expect(Object.is(value.w, JSON.parse(literal))).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('reads a page of doubles and safe integers the same on the lossless path as through JSON.parse (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.maxSafeInteger(), fc.string()), { maxLength: 30 }), (rows) => {
        const fast = JSON.stringify({ rows, note: 'x' });
        const slow = fast.replace('"note":"x"', '"note":12345678901234567890');
        expect(mayHoldInexactNumber(slow)).toBe(true);
        expect({ ...(parsed(slow) as object), note: 'x' }).toEqual(parsed(fast));
        expect(rounded(parsed(fast))).toEqual(JSON.parse(fast));
      }),
      { numRuns: 300 },
    );
  });
});

describe('parseJsonBody with a say on whether literals matter', () => {
  const text = '{"a":[12345678901234567890,0.1000000000000000055511151231257827,"x"]}';

  it('returns what JSON.parse reads, unscanned, when the body holds no number whose text matters', () => {
    const seen: unknown[] = [];
    const parsed = parseJsonBody(text, (value) => {
      seen.push(value);
      return false;
    });
    expect(parsed).toEqual({ ok: true, value: JSON.parse(text) });
    expect(seen).toEqual([JSON.parse(text)]);
  });

  it('reads the body exactly when it does', () => {
    const parsed = parseJsonBody(text, () => true);
    expect(parsed).toEqual({ ok: true, value: { a: [new ExactNumber('12345678901234567890'), new ExactNumber('0.1000000000000000055511151231257827'), 'x'] } });
  });

  it('refuses malformed JSON before asking', () => {
    let asked = false;
    const parsed = parseJsonBody('{"a":', () => (asked = true));
    expect(parsed.ok).toBe(false);
    expect(asked).toBe(false);
  });
});

describe('parseJsonBytes', () => {
  const ROWS = ['result', 'rows'] as const;
  /** A page of `count` rows whose cells include the cut pattern "],[" inside strings, escapes, non-ASCII text and nested values. */
  function pageText(
    count: number,
    options: { rowShape?: 'array' | 'object'; extra?: (index: number) => unknown[]; before?: string; after?: string } = {},
  ): string {
    const headers = ['id', 'rows', 'note', 'nested', 'n'];
    const rows: string[] = [];
    for (let index = 0; index < count; index++) {
      const cells = [
        `INC-${index}`,
        index % 7 === 0 ? '],[' : '"],["',
        index % 5 === 0 ? 'ünïcödé — 漢字 🙂 \\"quoted\\" ],{' : `line\nbreak ${index}`,
        [[index], { a: [index, index + 1] }],
        index * 1.5,
        ...(options.extra?.(index) ?? []),
      ];
      const row = options.rowShape === 'object' ? Object.fromEntries(headers.map((header, at) => [header, cells[at]])) : cells;
      rows.push(JSON.stringify(row));
    }
    return `{"ok":true,${options.before ?? ''}"result":{"navigation":{"hasPrev":false,"hasNext":true,"rowsCount":${count},"totalRows":99},"headers":${JSON.stringify(headers)},"dataTypes":["string","string","string","object","number"],"rows":[${rows.join(index0Spacing(count))}]${options.after ?? ''},"query":{"filters":[{"a":[1]},{"b":[2]}]}}}`;
  }
  // Whitespace between some rows, as a pretty-printing server would put.
  const index0Spacing = (count: number) => (count % 2 === 0 ? ',' : ' ,\n ');

  const bytesOf = (text: string) => Buffer.from(text, 'utf8');
  const sliced = (text: string, literalsMatter?: (value: unknown) => boolean) => parseJsonBytes(bytesOf(text), { slicedArray: ROWS, literalsMatter });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('reads a page as parseJsonBody reads its text, cut patterns inside strings and nested values included', () => {
    for (const count of [10, 800, 3001]) {
      for (const rowShape of ['array', 'object'] as const) {
        const text = pageText(count, { rowShape });
        expect(sliced(text)).toEqual(parseJsonBody(text));
        expect(sliced(text)).toEqual({ ok: true, value: JSON.parse(text) });
      }
    }
  });

  it('never decodes the page as one string: no decoded piece reaches twice a slice', () => {
    const text = pageText(5000);
    expect(text.length).toBeGreaterThan(10 * SLICE_BYTES);
    const lengths: number[] = [];
    const toString = Buffer.prototype.toString;
    vi.spyOn(Buffer.prototype, 'toString').mockImplementation(function (this: Buffer, ...args: unknown[]) {
      const decoded = (toString as (...a: unknown[]) => string).apply(this, args);
      lengths.push(decoded.length);
      return decoded;
    });
    expect(sliced(text)).toEqual({ ok: true, value: JSON.parse(text) });
    expect(lengths.length).toBeGreaterThan(10);
    expect(Math.max(...lengths)).toBeLessThan(2 * SLICE_BYTES);
  });

  it('leaves the bytes as they were', () => {
    const bytes = bytesOf(pageText(2000));
    const copy = Buffer.from(bytes);
    parseJsonBytes(bytes, { slicedArray: ROWS });
    expect(bytes.equals(copy)).toBe(true);
  });

  it('ignores a leading byte-order mark', () => {
    const text = pageText(1500);
    expect(parseJsonBytes(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytesOf(text)]), { slicedArray: ROWS })).toEqual({
      ok: true,
      value: JSON.parse(text),
    });
  });

  it('takes the last of duplicate "rows" and "result" members, as JSON.parse does', () => {
    const base = pageText(1500);
    const laterRows = base.replace(',"query":', ',"rows":[["late"]],"query":');
    const laterResult = `${base.slice(0, -1)},"result":{"rows":[]}}`;
    const earlierResult = base.replace('{"ok":true,', '{"ok":true,"result":{"rows":[[1]]},');
    for (const text of [laterRows, laterResult, earlierResult]) expect(sliced(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it('finds the rows of the result when a "rows" member comes first elsewhere', () => {
    const text = pageText(1500, { before: '"meta":{"rows":[[1,2],[3,4]]},' });
    expect(sliced(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it.each([
    ['cut short', (text: string) => text.slice(0, text.length - 40)],
    ['cut inside the rows', (text: string) => text.slice(0, Math.floor(text.length / 2))],
    ['a row that is not JSON', (text: string) => text.replace('"INC-900"', 'INC-900')],
    ['garbage after the body', (text: string) => `${text} x`],
    ['a control character in a string', (text: string) => text.replace('INC-1200', 'INC\u0001')],
  ])("refuses a page %s with parseJsonBody's own error", (_name, spoil) => {
    const text = spoil(pageText(2000));
    const result = sliced(text);
    expect(result.ok).toBe(false);
    expect(result).toEqual(parseJsonBody(text));
  });

  it('keeps long literals exact in every slice, and reads the whole page exactly when one slice says its literals matter', () => {
    const text = pageText(3000, { extra: (index) => [index === 2900 ? 'EXACT' : 'x'] })
      .replace('"EXACT"', '12345678901234567890')
      .replace('"totalRows":99', '"totalRows":99.000000000000000000001');
    const exactAll = sliced(text);
    expect(exactAll).toEqual(parseJsonBody(text));
    const rows = (exactAll as { value: { result: { rows: unknown[][]; navigation: { totalRows: unknown } } } }).value.result;
    expect(rows.rows[2900]![5]).toEqual(new ExactNumber('12345678901234567890'));
    expect(rows.navigation.totalRows).toEqual(new ExactNumber('99.000000000000000000001'));

    // Asked once a slice, with that slice's rows in place: one late slice holds the number.
    const askedWith: number[] = [];
    const late = (value: unknown) => {
      const pageRows = (value as { result: { rows: unknown[][] } }).result.rows;
      askedWith.push(pageRows.length);
      return pageRows.some((row) => typeof row[5] === 'number');
    };
    expect(sliced(text, late)).toEqual(parseJsonBody(text, (value) => late(value)));
    expect(askedWith.length).toBeGreaterThan(2);
    // When no slice says so, JSON.parse's reading, the navigation's long literal too.
    expect(sliced(text, () => false)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it('reads a small body whole, and a body without the array whole', () => {
    expect(sliced('{"ok":true,"result":{"rows":[[12345678901234567890]]}}')).toEqual({
      ok: true,
      value: { ok: true, result: { rows: [[new ExactNumber('12345678901234567890')]] } },
    });
    const noRows = JSON.stringify({ ok: true, items: Array.from({ length: 3000 }, (_, index) => [index, 'x'.repeat(20)]) });
    expect(sliced(noRows)).toEqual({ ok: true, value: JSON.parse(noRows) });
  });

  it('agrees with parseJsonBody on pages of arbitrary JSON rows (property)', () => {
    const row = fc.array(fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom('],[', '},{', '\\', '"', '"],["', ']]', '[[')), { maxLength: 6 });
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 60 }), fc.integer({ min: 40, max: 400 }), fc.boolean(), (rows, copies, spaced) => {
        const all = Array.from({ length: copies }, (_, index) => rows[index % rows.length]!);
        const text = JSON.stringify({ ok: true, result: { navigation: { totalRows: all.length }, rows: all } }, null, spaced ? 1 : undefined);
        expect(sliced(text)).toEqual(parseJsonBody(text));
      }),
      { numRuns: 40 },
    );
  });
});
