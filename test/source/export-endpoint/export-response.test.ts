import { describe, expect, it } from 'vitest';
import { parseExportPage, readExactPageWhen } from '../../../src/source/export-endpoint/export-response.js';
import { ExactNumber } from '../../../src/value-types/exact-number.js';

const navigation = { hasPrev: false, hasNext: false, rowsCount: 2, totalRows: 2 };
const body = (rows: unknown[], extra: Record<string, unknown> = {}) => ({
  ok: true,
  result: { navigation, headers: ['A', 'B'], dataTypes: ['text', 'number'], rows, sourceImported: false, ...extra },
});

describe('parseExportPage', () => {
  it('keeps positional rows as they are', () => {
    const parsed = parseExportPage(
      body([
        ['x', 1],
        ['y', null],
      ]),
      0,
    );
    expect(parsed).toEqual({
      ok: true,
      page: expect.objectContaining({
        rows: [
          ['x', 1],
          ['y', null],
        ],
        pageNumber: 0,
      }),
    });
  });

  it('turns rows keyed by header into positional rows, missing keys as null', () => {
    const parsed = parseExportPage(body([{ B: 1, A: 'x' }, { A: 'y' }]), 3);
    expect(parsed.ok && parsed.page.rows).toEqual([
      ['x', 1],
      ['y', null],
    ]);
  });

  it('allows extra members the spec does not list', () => {
    expect(
      parseExportPage(
        body(
          [
            ['x', 1],
            ['y', 2],
          ],
          { query: { items: [] }, future: 1 },
        ),
        0,
      ).ok,
    ).toBe(true);
  });

  it.each([
    { rows: [['x', 1], 'oops'], problem: 'row 1 is string, not an array or an object' },
    { rows: [['x', 1], null], problem: 'row 1 is null, not an array or an object' },
    // A long number is parsed losslessly into an object; a header called "text" must not make it a row.
    { rows: [['x', 1], new ExactNumber('12345678901234567890')], problem: 'row 1 is a number, not an array or an object' },
    { rows: [['x']], problem: 'row 0 has 1 value for 2 headers' },
    { rows: [{ A: 'x', C: 2 }], problem: 'row 0 has key "C" that is not a header' },
  ])('refuses a malformed row and names its index ($problem)', ({ rows, problem }) => {
    expect(parseExportPage(body(rows), 4)).toEqual({ ok: false, problem });
  });

  it('refuses a body without ok: true or without navigation', () => {
    expect(parseExportPage({ ok: false }, 0)).toMatchObject({ ok: false });
    const missing = parseExportPage({ ok: true, result: { headers: [], dataTypes: [], rows: [] } }, 0);
    expect(missing).toMatchObject({ ok: false, problem: expect.stringContaining('result.navigation') });
  });

  it('refuses rows keyed by header when a header repeats, naming it', () => {
    const repeated = { ok: true, result: { navigation, headers: ['A', 'B', 'A'], dataTypes: ['text', 'number', 'text'], rows: [{ A: 'x', B: 1 }] } };
    expect(parseExportPage(repeated, 2)).toEqual({
      ok: false,
      problem: 'header "A" occurs twice (columns 0 and 2) and rows are objects keyed by header, so values cannot be placed',
    });
  });

  it('keeps positional rows under a repeated header: position says which column is which', () => {
    const repeated = { ok: true, result: { navigation, headers: ['A', 'A'], dataTypes: ['text', 'text'], rows: [['x', 'y']] } };
    expect(parseExportPage(repeated, 0)).toMatchObject({ ok: true, page: { rows: [['x', 'y']] } });
  });

  it.each([
    { body: { ok: false, error: { status: 403, message: 'tile is private' } }, problem: 'ok: false: tile is private', serviceMessage: 'tile is private' },
    { body: { ok: false, error: 'quota exhausted' }, problem: 'ok: false: quota exhausted', serviceMessage: 'quota exhausted' },
    { body: { ok: false, error: { code: 7 } }, problem: 'ok: false without an error message (error: {"code":7})' },
    { body: { ok: false }, problem: 'ok: false without an error message' },
  ])('reports ok: false with the service message when it gives one ($problem)', ({ body, ...expected }) => {
    expect(parseExportPage(body, 0)).toEqual({ ok: false, ...expected });
  });

  it('keeps the page number the answer echoes in result.query, whatever its type', () => {
    const echoed = (options: unknown) =>
      parseExportPage(
        body(
          [
            ['x', 1],
            ['y', 2],
          ],
          { query: { items: [], options } },
        ),
        0,
      );
    expect(echoed({ pageNumber: 3 })).toMatchObject({ ok: true, page: { echoedPageNumber: 3 } });
    expect(echoed({ pageNumber: '0' })).toMatchObject({ ok: true, page: { echoedPageNumber: '0' } });
    const silent = echoed({ itemsPerPage: 50 });
    expect(silent.ok && 'echoedPageNumber' in silent.page).toBe(false);
  });
});

describe('readExactPageWhen', () => {
  const body = (rows: unknown[], headers = ['Type', 'Count'], dataTypes = ['text', 'number']) => ({
    ok: true,
    result: { navigation: {}, headers, dataTypes, rows },
  });
  const textColumnOnly = () => [0];

  it('says no when the listed columns hold only strings and nulls, whatever the other columns hold', () => {
    expect(
      readExactPageWhen(textColumnOnly)(
        body([
          ['a', 1.5],
          [null, 12345678901234567890],
          ['', { $date: 1 }],
        ]),
      ),
    ).toBe(false);
  });

  it('says yes for a number, or an object that may hold one, in a listed column', () => {
    expect(
      readExactPageWhen(textColumnOnly)(
        body([
          ['a', 1],
          [7, 2],
        ]),
      ),
    ).toBe(true);
    expect(readExactPageWhen(textColumnOnly)(body([[{ $date: 1 }, 2]]))).toBe(true);
    expect(readExactPageWhen(textColumnOnly)(body([[true, 2]]))).toBe(true);
  });

  it('says yes for whatever it cannot place: rows keyed by header, an error body, columns that do not map', () => {
    expect(readExactPageWhen(textColumnOnly)(body([{ Type: 'a', Count: 1 }]))).toBe(true);
    expect(readExactPageWhen(textColumnOnly)({ error: { status: 500, message: 'x' } })).toBe(true);
    expect(readExactPageWhen(() => undefined)(body([['a', 1]]))).toBe(true);
  });

  it('maps the columns once while headers and dataTypes stay the same', () => {
    const calls: string[][] = [];
    const matter = readExactPageWhen((headers) => {
      calls.push([...headers]);
      return [0];
    });
    matter(body([['a', 1]]));
    matter(body([['b', 2]]));
    matter(body([['c', 3]], ['Kind', 'Count']));
    expect(calls).toEqual([
      ['Type', 'Count'],
      ['Kind', 'Count'],
    ]);
  });
});
