import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../src/value-types/exact-number.js';
import type { Column } from '../../src/transform/column.js';
import { ValueInvalidError } from '../../src/transform/transform-errors.js';
import { type TypedRowsOptions, toTypedRows } from '../../src/transform/typed-rows.js';

const columns: Column[] = [
  { name: 'number', header: 'Number', type: 'INT64', sourceDataType: 'number' },
  { name: 'ratio', header: 'Ratio', type: 'FLOAT64', sourceDataType: 'number' },
  { name: 'amount', header: 'Amount', type: 'NUMERIC', sourceDataType: 'number' },
  { name: 'status', header: 'Status', type: 'STRING', sourceDataType: 'text' },
  { name: 'created', header: 'Created', type: 'TIMESTAMP', sourceDataType: 'datetime' },
  { name: 'day', header: 'Day', type: 'DATE', sourceDataType: 'datetime' },
];

const options: TypedRowsOptions = {
  timezone: 'Europe/Berlin',
  onInvalidValue: 'fail',
  jobName: 'weekly_incidents',
  pageNumber: 3,
  firstRowIndex: 150,
};

describe('toTypedRows', () => {
  it('types every cell by its column', () => {
    const { rows, nulledValues } = toTypedRows(
      [
        ['42', '12.5%', 0.1, 'resolved', { $date: 1_706_743_800_000 }, '2024-02-01'],
        [null, null, null, null, null, null],
        [7, -0, '1e3', 12, '2024-01-15T10:00:00', { $date: 1_706_743_800_000 }],
      ],
      columns,
      options,
    );
    expect(rows).toEqual([
      [42n, 12.5, '0.1', 'resolved', 1_706_743_800_000, '2024-02-01'],
      [null, null, null, null, null, null],
      [7n, 0, '1000', '12', Date.parse('2024-01-15T09:00:00Z'), '2024-02-01'],
    ]);
    expect(nulledValues).toBe(0);
  });

  it('reads a missing cell (undefined) as null', () => {
    const sparse: unknown[] = new Array(columns.length);
    expect(toTypedRows([sparse], columns, options).rows).toEqual([[null, null, null, null, null, null]]);
  });

  it('fails on an invalid value, naming job, page, absolute row, column, type and value', () => {
    const rows = [
      [1, 1, 1, 'a', 0, '2024-01-01'],
      [2, 2, 2, 'b', 0, '2024-01-01'],
      ['12.5', 3, 3, 'c', 0, '2024-01-01'],
    ];
    expect(() => toTypedRows(rows, columns, options)).toThrow(ValueInvalidError);
    try {
      toTypedRows(rows, columns, options);
    } catch (error) {
      const invalid = error as ValueInvalidError;
      expect(invalid.code).toBe('value_invalid');
      expect(invalid.location).toEqual({ jobName: 'weekly_incidents', pageNumber: 3, rowIndex: 152 });
      expect(invalid.message).toBe(
        'job weekly_incidents: page 3, row 152, column "Number" (INT64): value "12.5" is invalid: ' + 'has a fractional part; INT64 holds whole numbers only',
      );
    }
  });

  it('cuts a long value to about 100 characters in the message', () => {
    const long = 'x'.repeat(5000);
    const stringColumn: Column[] = [{ name: 'c', header: 'C', type: 'FLOAT64', sourceDataType: 'number' }];
    try {
      toTypedRows([[long]], stringColumn, options);
      expect.unreachable();
    } catch (error) {
      const invalid = error as ValueInvalidError;
      expect(invalid.valuePreview).toBe(`"${'x'.repeat(100)}"…`);
      expect(invalid.message.length).toBeLessThan(300);
    }
  });

  it('shows objects as JSON in the message', () => {
    const stringColumn: Column[] = [{ name: 's', header: 'S', type: 'STRING', sourceDataType: 'text' }];
    expect(() => toTypedRows([[{ a: [1, 2] }]], stringColumn, options)).toThrow(
      expect.objectContaining({ code: 'value_invalid', message: expect.stringContaining('value {"a":[1,2]} is invalid') }),
    );
  });

  it('with onInvalidValue null, loads invalid values as null and counts them', () => {
    const { rows, nulledValues } = toTypedRows(
      [
        ['x', 'y', 'z', {}, 'never', '2023-02-29'],
        [1, 2, 3, 'ok', 0, '2024-01-01'],
      ],
      columns,
      { ...options, onInvalidValue: 'null' },
    );
    expect(rows[0]).toEqual([null, null, null, null, null, null]);
    expect(rows[1]).toEqual([1n, 2, '3', 'ok', 0, '2024-01-01']);
    expect(nulledValues).toBe(6);
  });

  it('does not count genuine nulls as nulled values', () => {
    const { nulledValues } = toTypedRows([[null, null, null, null, null, null]], columns, { ...options, onInvalidValue: 'null' });
    expect(nulledValues).toBe(0);
  });

  it('returns no rows for an empty page', () => {
    expect(toTypedRows([], columns, options)).toEqual({ rows: [], nulledValues: 0 });
  });

  // How fast is the bench's to say (a ratio in one run), not a wall-clock bound here.
  it('types 100k rows of mixed columns, the last as the first', () => {
    const row = ['42', 12.5, '3.25', 'resolved', { $date: 1_706_743_800_000 }, '2024-02-01T10:00:00'];
    const rows = Array.from({ length: 100_000 }, () => row);
    const result = toTypedRows(rows, columns, options);
    expect(result.rows).toHaveLength(100_000);
    expect(result.rows[99_999]).toEqual(toTypedRows([row], columns, options).rows[0]);
    expect(result.nulledValues).toBe(0);
  });

  it('types literals the JSON reader kept exact from their digits: INT64 and NUMERIC exact, FLOAT64 nearest, STRING as sent', () => {
    const big = new ExactNumber('9223372036854775807');
    const decimal = new ExactNumber('-12345678901234567.5');
    const { rows } = toTypedRows([[big, decimal, decimal, decimal, 0, '2024-01-01']], columns, options);
    expect(rows).toEqual([[9223372036854775807n, -12345678901234568, '-12345678901234567.5', '-12345678901234567.5', 0, '2024-01-01']]);
  });

  it('refuses an exact literal beyond INT64, naming page, absolute row, column and the literal as sent', () => {
    const rows = [
      [1, 1, 1, 'a', 0, '2024-01-01'],
      [new ExactNumber('9223372036854775808'), 1, 1, 'a', 0, '2024-01-01'],
    ];
    expect(() => toTypedRows(rows, columns, options)).toThrow(
      expect.objectContaining({
        code: 'value_invalid',
        location: { jobName: 'weekly_incidents', pageNumber: 3, rowIndex: 151 },
        valuePreview: '9223372036854775808',
        message:
          'job weekly_incidents: page 3, row 151, column "Number" (INT64): value 9223372036854775808 is invalid: ' +
          'outside the INT64 range -9223372036854775808..9223372036854775807',
      }),
    );
  });

  it('refuses an exact literal beyond NUMERIC instead of rounding it, and cuts a huge one in the message', () => {
    const huge = new ExactNumber(`1${'0'.repeat(300)}.5`);
    try {
      toTypedRows([[1, 1, huge, 'a', 0, '2024-01-01']], columns, options);
      expect.unreachable();
    } catch (error) {
      const invalid = error as ValueInvalidError;
      expect(invalid.header).toBe('Amount');
      expect(invalid.valuePreview).toBe(`1${'0'.repeat(99)}…`);
      expect(invalid.reason).toContain('more than 29 integer digits');
    }
  });
});
