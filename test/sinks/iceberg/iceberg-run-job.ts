// A job of the sandbox's tile whose columns take every type the iceberg sink maps, and its CSV as
// the Iceberg readers give text back: what the `tilehouse run` tests of the iceberg sink compare.
import { parse as parseCsv } from 'csv-parse/sync';

/** Every type the sink maps: Number INT64, Amount NUMERIC, Score FLOAT64, Description STRING, Day DATE, Created TIMESTAMP. */
export const typedQuery = {
  items: [
    { header: 'Number', formula: '[incident.number]', dataType: 'number', order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Amount', formula: '[incident.number]', dataType: 'number', filters: [] },
    { header: 'Score', formula: '[incident.number]', dataType: 'number', filters: [] },
    { header: 'Description', formula: '[incident.description]', dataType: 'text', filters: [] },
    { header: 'Day', formula: '[incident.created]', dataType: 'datetime', filters: [] },
    { header: 'Created', formula: '[incident.created]', dataType: 'datetime', filters: [] },
  ],
  options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
};

/** The query with only the incidents numbered above `above` (a later night exporting fewer rows). */
export function typedQueryAbove(above: number): typeof typedQuery {
  return {
    ...typedQuery,
    items: typedQuery.items.map((item, i) => (i === 0 ? { ...item, filters: [{ operator: 'gt', values: [String(above)] }] } : item)) as typeof typedQuery.items,
  };
}

export const COLUMN_TYPES = { Number: { type: 'INT64' }, Amount: { type: 'NUMERIC' }, Day: { type: 'DATE' } };
export const EXPECTED_COLUMNS = ['number', 'amount', 'score', 'description', 'day', 'created'];
const TYPES = ['INT64', 'NUMERIC', 'FLOAT64', 'STRING', 'DATE', 'TIMESTAMP'] as const;

/** The CSV of a run, as the readers give text back (iceberg_read.py): null for an unquoted empty field, timestamps in microseconds, a whole double with ".0". */
export function csvAsReaderText(csv: string): (string | null)[][] {
  const records = parseCsv(csv, { cast: (value, context) => (value === '' && !context.quoting ? null : value), from_line: 2 }) as (string | null)[][];
  return records.map((record) =>
    record.map((field, index) => {
      if (field === null) return null;
      switch (TYPES[index]) {
        case 'TIMESTAMP':
          return String(BigInt(Date.parse(field)) * 1000n);
        case 'FLOAT64':
          return /^-?\d+$/.test(field) ? `${field}.0` : field;
        case 'NUMERIC':
          return field.includes('.') ? field.replace(/0+$/, '').replace(/\.$/, '') : field;
        default:
          return field;
      }
    }),
  );
}
