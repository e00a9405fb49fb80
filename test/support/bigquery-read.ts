import type { BigQuery } from '@google-cloud/bigquery';

/**
 * A cell as read back from BigQuery, in plain values a test can compare with `toEqual`:
 * INT64 → bigint (exact), TIMESTAMP → the client's ISO text (`2024-03-01T06:00:00.000Z`),
 * DATE → `YYYY-MM-DD`, NUMERIC → its plain decimal text, FLOAT64 → number, STRING → string.
 */
export type ReadCell = number | bigint | string | null;

/** Every row of a table, ordered, with each cell unwrapped (see ReadCell). */
export async function readTable(client: BigQuery, table: string, orderBy: string): Promise<Record<string, ReadCell>[]> {
  const [rows] = await client.query({ query: `SELECT * FROM \`${table}\` ORDER BY ${orderBy}`, wrapIntegers: true });
  return (rows as Record<string, unknown>[]).map((row) =>
    Object.fromEntries(Object.entries(row).map(([name, value]) => [name, unwrap(value)])),
  );
}

/** Whether the table exists; the dataset may be missing too. */
export async function tableExists(client: BigQuery, dataset: string, table: string): Promise<boolean> {
  const [datasetExists] = await client.dataset(dataset).exists();
  if (!datasetExists) return false;
  const [exists] = await client.dataset(dataset).table(table).exists();
  return exists;
}

/** The table's columns as `name TYPE`, in table order. */
export async function tableColumns(client: BigQuery, dataset: string, table: string): Promise<string[]> {
  const [metadata] = await client.dataset(dataset).table(table).getMetadata();
  const fields = (metadata as { schema?: { fields?: { name: string; type: string }[] } }).schema?.fields ?? [];
  return fields.map((field) => `${field.name} ${field.type}`);
}

function unwrap(value: unknown): ReadCell {
  if (value === null || typeof value === 'number' || typeof value === 'string') return value;
  const kind = (value as { constructor?: { name?: string } }).constructor?.name;
  switch (kind) {
    case 'BigQueryInt':
      return BigInt((value as { value: string }).value);
    case 'BigQueryTimestamp':
    case 'BigQueryDate':
      return (value as { value: string }).value;
    case 'Big':
      return (value as { toFixed(): string }).toFixed();
    default:
      throw new Error(`unexpected value from BigQuery: ${kind} ${JSON.stringify(value)}`);
  }
}
