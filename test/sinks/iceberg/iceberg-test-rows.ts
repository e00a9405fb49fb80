import { parse } from 'csv-parse/sync';
import { CsvRecordEncoder } from '../../../src/sinks/csv/csv-record-encoder.js';
import type { TypedRow } from '../../../src/transform/column.js';
import type { ColumnType } from '../../../src/value-types/column-types.js';
import { type PyicebergTable, readIceberg, type ReadRows } from '../../support/iceberg-readers.js';

/**
 * Rows for the Iceberg writer's tests (values the sandbox does not make: longs beyond 2^53,
 * NUMERIC with 29 integer digits, a 1938 timestamp, non-ASCII, "" beside null), the text the
 * readers give back for them (iceberg_read.py's rules), and both readers' reading of a table.
 */
export const COLUMNS: readonly { name: string; type: ColumnType }[] = [
  { name: 'id', type: 'INT64' },
  { name: 'amount', type: 'NUMERIC' },
  { name: 'title', type: 'STRING' },
  { name: 'created', type: 'TIMESTAMP' },
  { name: 'day', type: 'DATE' },
  { name: 'score', type: 'FLOAT64' },
];

export function rowsOf(first: number, count: number): TypedRow[] {
  return Array.from({ length: count }, (_, offset) => {
    const index = first + offset;
    return [
      9_007_199_254_740_993n + BigInt(index),
      index % 3 === 0 ? '-12345678901234567890123456789.123456789' : `${index}.5`,
      index % 4 === 0 ? null : index % 4 === 1 ? '' : `título ${index} ✓`,
      index % 5 === 0 ? -1_006_819_200_000 + index : 1_733_000_000_000 + index * 1_000,
      index % 6 === 0 ? '1938-02-03' : '2024-02-29',
      index % 7 === 0 ? null : index / 8,
    ];
  });
}

/**
 * The expected side of every comparison: the rows as the CSV sink writes them (its own record
 * encoder, the bytes a CSV target of the same run holds), parsed back and put in the readers'
 * text (iceberg_read.py): a quoted empty field is "", an unquoted one null; timestamps (ISO 8601
 * with milliseconds in the CSV) as microseconds; a whole double with Python's ".0".
 */
export function asText(row: TypedRow): (string | null)[] {
  return csvText([row])[0]!;
}

function csvText(rows: readonly TypedRow[]): (string | null)[][] {
  const columns = COLUMNS.map((column) => ({ ...column, header: column.name, sourceDataType: 'text' }));
  const csv = new CsvRecordEncoder(columns).encode(rows);
  const records = parse(csv, {
    cast: (value, context) => (value === '' && !context.quoting ? null : value),
  }) as (string | null)[][];
  return records.map((record) =>
    record.map((field, index) => {
      if (field === null) return null;
      switch (COLUMNS[index]!.type) {
        case 'TIMESTAMP':
          return String(BigInt(Date.parse(field)) * 1000n);
        case 'FLOAT64':
          return /^-?\d+$/.test(field) ? `${field}.0` : field;
        default:
          return field;
      }
    }),
  );
}

/** The same text made from the typed values directly: the CSV's reading is checked against it. */
export function typedText(row: TypedRow): (string | null)[] {
  return row.map((value, index) => {
    if (value === null) return null;
    switch (COLUMNS[index]?.type ?? (index === COLUMNS.length ? 'STRING' : 'TIMESTAMP')) {
      case 'INT64':
        return String(value);
      case 'NUMERIC':
        return String(value)
          .replace(/(\.\d*?)0+$/, '$1')
          .replace(/\.$/, '');
      case 'TIMESTAMP':
        return String(BigInt(value as number) * 1000n);
      case 'FLOAT64': {
        const text = String(value);
        return /^-?\d+$/.test(text) ? `${text}.0` : text;
      }
      default:
        return String(value);
    }
  });
}

/** Rows as sorted text lines, so two readings compare whatever order the files are scanned in. */
export function sortedLines(rows: readonly (readonly (string | null)[])[]): string[] {
  return rows.map((row) => JSON.stringify(row)).sort();
}

export interface BothReadings {
  pyiceberg: ReadRows;
  duckdb: ReadRows;
}

/** The table read by pyiceberg through the catalog and by DuckDB from the metadata file the catalog names (`s3`: DuckDB's httpfs settings for a table on s3://). */
export async function readBoth(
  python: string,
  table: PyicebergTable,
  s3?: { endpoint: string; region: string; keyId: string; secret: string },
): Promise<BothReadings> {
  const pyiceberg = await readIceberg(python, 'pyiceberg-scan', table);
  const { metadataLocation } = await readIceberg(python, 'pyiceberg-table', table);
  const duckdb = await readIceberg(python, 'duckdb-scan', { metadata: metadataLocation, ...(s3 ? { s3 } : {}) });
  return { pyiceberg, duckdb };
}
