import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeValue } from '../../src/sinks/bigquery/encode-value.js';
import { CSV_DIALECT } from '../../src/sinks/csv/csv-dialect.js';
import { CsvRecordEncoder } from '../../src/sinks/csv/csv-record-encoder.js';
import { parseExportPage } from '../../src/source/export-endpoint/export-response.js';
import { parseJsonBody } from '../../src/source/json-body.js';
import type { Column, TypedRow } from '../../src/transform/column.js';
import { type ColumnOverrides, toColumns } from '../../src/transform/columns.js';
import { toTypedRows } from '../../src/transform/typed-rows.js';
import { formatDecimal, parseDecimal } from '../../src/transform/values/decimal.js';

// A JSON number travels: response text → parseJsonBody → export page (rows normalised) → typed
// columns → the sinks' encoders. These tests run that whole path on body text, as the API sends it.

const HEADERS = ['Amount', 'Count', 'Label', 'Ratio'];
const OVERRIDES: ColumnOverrides = { Amount: { type: 'NUMERIC' }, Count: { type: 'INT64' } };

interface Typed {
  columns: Column[];
  rows: TypedRow[];
}

/** Body text → typed rows, as the pipeline does it (parse is the body reader under test). */
function typedRows(text: string, parseBody: (text: string) => { ok: true; value: unknown } | { ok: false; error: string } = parseJsonBody): Typed {
  const body = parseBody(text);
  if (!body.ok) throw new Error(body.error);
  const page = parseExportPage(body.value, 4);
  if (!page.ok) throw new Error(page.problem);
  const { columns } = toColumns(page.page.headers, page.page.dataTypes, OVERRIDES);
  const { rows } = toTypedRows(page.page.rows, columns, { timezone: 'UTC', onInvalidValue: 'fail', jobName: 'amounts', pageNumber: 4, firstRowIndex: 200 });
  return { columns, rows };
}

/** An export page body with the given row texts (each a JSON array or object literal). */
function pageText(rowTexts: readonly string[], dataTypes = ['number', 'number', 'text', 'number']): string {
  return (
    `{"ok":true,"result":{"navigation":{"hasPrev":false,"hasNext":false,"rowsCount":${rowTexts.length},"totalRows":${rowTexts.length}},` +
    `"headers":${JSON.stringify(HEADERS)},"dataTypes":${JSON.stringify(dataTypes)},"rows":[${rowTexts.join(',')}]}}`
  );
}

function rowText(cells: readonly string[], asObject: boolean): string {
  return asObject ? `{${cells.map((cell, index) => `${JSON.stringify(HEADERS[index])}:${cell}`).join(',')}}` : `[${cells.join(',')}]`;
}

/** The CSV file body the CSV sink writes for these rows (its header, then its record encoder's text). */
function csvText({ columns, rows }: Typed): string {
  return stringify([columns.map((column) => column.header)], CSV_DIALECT) + new CsvRecordEncoder(columns).encode(rows);
}

function readCsv(text: string): (string | null)[][] {
  return parse(text, { cast: (value, context) => (value === '' && !context.quoting ? null : value) }) as (string | null)[][];
}

const digitString = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });

/**
 * A value NUMERIC holds (at most 29 integer and 9 fractional digits, so up to 38 significant
 * digits), its canonical text (the transform's NUMERIC contract), and a JSON number literal for
 * it: plain, with extra trailing zeros, or in exponent form. Long values are favoured: they are
 * the ones a double cannot hold.
 */
const numericValue = fc
  .tuple(
    fc.boolean(),
    fc.oneof(digitString(0, 29), digitString(20, 29)),
    fc.oneof(digitString(0, 9), digitString(9, 9)),
    fc.constantFrom('plain', 'trailing-zeros', 'exponent'),
    fc.nat({ max: 6 }),
  )
  .map(([negative, wholeDigits, fractionDigits, spelling, padding]) => {
    const whole = wholeDigits.replace(/^0+/, '') || '0';
    const fraction = fractionDigits.replace(/0+$/, '');
    const isZero = whole === '0' && fraction === '';
    const sign = negative && !isZero ? '-' : '';
    const canonical = `${sign}${whole}${fraction === '' ? '' : `.${fraction}`}`;
    let literal = canonical;
    if (spelling === 'trailing-zeros') literal = `${sign}${whole}.${fraction}${'0'.repeat(padding + 1)}`;
    if (spelling === 'exponent' && !isZero) {
      const significant = `${whole === '0' ? '' : whole}${fraction}`.replace(/^0+/, '');
      const exponent = (whole === '0' ? 0 : whole.length) - (whole === '0' ? fraction.length - significant.length : 0) - 1;
      const mantissa = significant.length === 1 ? significant : `${significant[0]}.${significant.slice(1)}`;
      literal = `${sign}${mantissa}${padding % 2 === 0 ? 'e' : 'E'}${exponent < 0 ? '-' : padding % 3 === 0 ? '+' : ''}${Math.abs(exponent)}`;
    }
    return { canonical, literal };
  });

const int64Value = fc.oneof(
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.bigInt({ min: 2n ** 53n - 2n, max: 2n ** 53n + 2n }).chain((n) => fc.constantFrom(n, -n)),
  fc.constantFrom(-(2n ** 63n), 2n ** 63n - 1n),
);

describe('number exactness from response body to sink encoding', () => {
  it('a NUMERIC of up to 38 significant digits sent as a JSON number reaches CSV and the BigQuery load line unchanged (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(numericValue, int64Value, fc.boolean()), { minLength: 1, maxLength: 20 }), (generated) => {
        const text = pageText(
          generated.map(([numeric, integer, asObject]) => rowText([numeric.literal, integer.toString(), numeric.literal, numeric.literal], asObject)),
        );
        const typed = typedRows(text);
        const [header, ...records] = readCsv(csvText(typed));
        expect(header).toEqual(HEADERS);
        expect(records).toEqual(generated.map(([numeric, integer]) => [numeric.canonical, integer.toString(), expect.any(String), expect.any(String)]));
        records.forEach((record, index) => {
          const literal = generated[index]![0].literal;
          // STRING: the literal as sent when a double cannot hold it, else JavaScript's text of the
          // number (as before); either way the same decimal value, no digit lost.
          expect([literal, String(Number(literal))]).toContain(record[2]);
          expect(formatDecimal(parseDecimal(record[2]!)!)).toBe(generated[index]![0].canonical);
          // FLOAT64 is a double by definition: the nearest one (with -0 folded), as JavaScript prints it.
          expect(record[3]).toBe(String(Number(literal) === 0 ? 0 : Number(literal)));
        });
        typed.rows.forEach((row, index) => {
          const [numeric, integer] = generated[index]!;
          expect(JSON.parse(encodeValue(row[0]!, typed.columns[0]!))).toBe(numeric.canonical);
          expect(JSON.parse(encodeValue(row[1]!, typed.columns[1]!))).toBe(integer.toString());
          expect(JSON.parse(encodeValue(row[2]!, typed.columns[2]!))).toBe(row[2]);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('JSON.parse alone would have rounded them: the same page through JSON.parse loses digits', () => {
    const text = pageText([rowText(['12345678901234567.5', '1', '12345678901234567.5', '1'], false)]);
    const native = typedRows(text, (body) => ({ ok: true, value: JSON.parse(body) }));
    expect(native.rows[0]![0]).toBe('12345678901234568');
    expect(typedRows(text).rows[0]![0]).toBe('12345678901234567.5');
  });

  it('writes an INT64 beyond 2^53 exactly, and refuses one beyond the INT64 range naming page, row, column and value', () => {
    const ok = typedRows(pageText([rowText(['1', '9007199254740993', '"x"', '1'], false), rowText(['1', '-9223372036854775808', '"x"', '1'], true)]));
    expect(readCsv(csvText(ok)).map((record) => record[1])).toEqual(['Count', '9007199254740993', '-9223372036854775808']);

    const text = pageText([rowText(['1', '2', '"x"', '1'], false), rowText(['1', '9223372036854775808', '"x"', '1'], false)]);
    expect(() => typedRows(text)).toThrow(expect.objectContaining({ code: 'value_invalid' }));
    expect(() => typedRows(text)).toThrow(
      'job amounts: page 4, row 201, column "Count" (INT64): value 9223372036854775808 is invalid: ' +
        'outside the INT64 range -9223372036854775808..9223372036854775807',
    );
  });

  it('refuses a NUMERIC with a 10th fractional digit or a 30th integer digit instead of rounding it', () => {
    expect(() => typedRows(pageText([rowText(['0.1234567891', '1', '"x"', '1'], false)]))).toThrow(
      'column "Amount" (NUMERIC): value 0.1234567891 is invalid: more than 9 fractional digits',
    );
    expect(() => typedRows(pageText([rowText(['123456789012345678901234567890', '1', '"x"', '1'], false)]))).toThrow(
      'column "Amount" (NUMERIC): value 123456789012345678901234567890 is invalid: more than 29 integer digits',
    );
  });

  it('writes the same CSV bytes as before for ordinary numbers, whichever path the body reader takes (property)', () => {
    const ordinary = fc.tuple(
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e15, max: 1e15 }).map((n) => Math.round(n * 1000) / 1000),
      fc.maxSafeInteger(),
      fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true })),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(ordinary, fc.boolean()), { maxLength: 20 }), fc.boolean(), (generated, inexact) => {
        const rows = generated.map(([cells, asObject]) =>
          rowText(
            cells.map((cell) => JSON.stringify(cell)),
            asObject,
          ),
        );
        // A literal a double cannot hold, in a FLOAT64 column (where it becomes that double either
        // way), sends the reader down its lossless path for the whole page.
        if (inexact) rows.push(rowText(['1', '2', '"x"', '12345678901234567890'], false));
        const text = pageText(rows, ['number', 'number', 'text', 'number']);
        const outcome = (parseBody?: Parameters<typeof typedRows>[1]) => {
          try {
            return csvText(typedRows(text, parseBody));
          } catch (error) {
            return (error as Error).message;
          }
        };
        expect(outcome()).toBe(outcome((body) => ({ ok: true, value: JSON.parse(body) })));
      }),
      { numRuns: 300 },
    );
  });
});
