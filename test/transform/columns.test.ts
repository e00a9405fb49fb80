import { describe, expect, it } from 'vitest';
import { numberTextColumns, toColumns } from '../../src/transform/columns.js';
import { ColumnCountMismatchError, ColumnOverrideInvalidError } from '../../src/transform/transform-errors.js';

describe('toColumns', () => {
  it('maps number to FLOAT64, text to STRING and datetime to TIMESTAMP', () => {
    const { columns, warnings } = toColumns(['Incidents', 'Status', 'Created'], ['number', 'text', 'datetime'], {});
    expect(columns).toEqual([
      { name: 'incidents', header: 'Incidents', type: 'FLOAT64', sourceDataType: 'number' },
      { name: 'status', header: 'Status', type: 'STRING', sourceDataType: 'text' },
      { name: 'created', header: 'Created', type: 'TIMESTAMP', sourceDataType: 'datetime' },
    ]);
    expect(warnings).toEqual([]);
  });

  it('applies overrides of number to INT64 and NUMERIC and of datetime to DATE', () => {
    const { columns } = toColumns(['Count', 'Ratio', 'Day'], ['number', 'number', 'datetime'], {
      Count: { type: 'INT64' },
      Ratio: { type: 'NUMERIC' },
      Day: { type: 'DATE' },
    });
    expect(columns.map((column) => column.type)).toEqual(['INT64', 'NUMERIC', 'DATE']);
  });

  it('accepts an override to the default type', () => {
    const { columns } = toColumns(['Count'], ['number'], { Count: { type: 'FLOAT64' } });
    expect(columns[0]?.type).toBe('FLOAT64');
  });

  it('loads an unknown dataType as STRING and warns naming the header and the dataType', () => {
    const { columns, warnings } = toColumns(['Open', 'Ok'], ['boolean', 'text'], {});
    expect(columns[0]).toMatchObject({ type: 'STRING', sourceDataType: 'boolean' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('"Open"');
    expect(warnings[0]).toContain('"boolean"');
  });

  it('trusts an override of an unknown dataType, still noting the unknown dataType', () => {
    const { columns, warnings } = toColumns(['Open'], ['duration'], { Open: { type: 'INT64' } });
    expect(columns[0]?.type).toBe('INT64');
    expect(warnings[0]).toContain('"duration"');
  });

  it.each([
    ['text', 'INT64'],
    ['text', 'TIMESTAMP'],
    ['number', 'DATE'],
    ['number', 'STRING'],
    ['datetime', 'FLOAT64'],
  ] as const)('refuses to load dataType %s as %s, naming header, from-type and to-type', (dataType, type) => {
    const call = () => toColumns(['Col A'], [dataType], { 'Col A': { type } });
    expect(call).toThrow(ColumnOverrideInvalidError);
    try {
      call();
    } catch (error) {
      const overrideError = error as ColumnOverrideInvalidError;
      expect(overrideError.code).toBe('column_override_invalid');
      expect(overrideError.exitCode).toBe(2);
      expect(overrideError.message).toContain('"Col A"');
      expect(overrideError.message).toContain(dataType);
      expect(overrideError.message).toContain(type);
    }
  });

  it('refuses an override naming a header the export does not have', () => {
    expect(() => toColumns(['Count'], ['number'], { Cuont: { type: 'INT64' } })).toThrow(
      expect.objectContaining({
        code: 'column_override_invalid',
        message: expect.stringMatching(/"Cuont".*INT64.*no such header.*"Count"/),
      }),
    );
  });

  it('fails when headers and dataTypes differ in length', () => {
    expect(() => toColumns(['a', 'b'], ['text'], {})).toThrow(ColumnCountMismatchError);
    expect(() => toColumns(['a', 'b'], ['text'], {})).toThrow(expect.objectContaining({ code: 'column_count_mismatch' }));
  });

  it('applies one override to every column with that header and keeps their names unique', () => {
    const { columns } = toColumns(['n', 'n'], ['number', 'number'], { n: { type: 'INT64' } });
    expect(columns.map((column) => [column.name, column.type])).toEqual([
      ['n', 'INT64'],
      ['n_2', 'INT64'],
    ]);
  });

  it('is not fooled by headers that are Object.prototype keys', () => {
    const { columns } = toColumns(['constructor', 'toString'], ['number', 'text'], {});
    expect(columns.map((column) => column.type)).toEqual(['FLOAT64', 'STRING']);
  });
});

describe('numberTextColumns', () => {
  it('names the columns whose values keep a number literal exactly: STRING (also for an unknown dataType), INT64, NUMERIC', () => {
    const headers = ['Ratio', 'Name', 'Count', 'Amount', 'Created', 'Day', 'Odd'];
    const dataTypes = ['number', 'text', 'number', 'number', 'datetime', 'datetime', 'duration'];
    const overrides = { Count: { type: 'INT64' }, Amount: { type: 'NUMERIC' }, Day: { type: 'DATE' } } as const;
    expect(numberTextColumns(headers, dataTypes, overrides)).toEqual([1, 2, 3, 6]);
  });

  it('is undefined when the columns do not map, so that every column counts', () => {
    expect(numberTextColumns(['A'], ['number', 'text'], {})).toBeUndefined();
    expect(numberTextColumns(['A'], ['text'], { A: { type: 'INT64' } })).toBeUndefined();
  });
});
