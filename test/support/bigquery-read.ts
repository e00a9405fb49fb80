import type { BigQuery } from '@google-cloud/bigquery';

/**
 * A cell as read back from BigQuery, in plain values a test can compare with `toEqual`:
 * INT64 → bigint (exact), TIMESTAMP → the client's ISO text (`2024-03-01T06:00:00.000Z`),
 * DATE → `YYYY-MM-DD`, NUMERIC → its plain decimal text, FLOAT64 → number, STRING → string.
 */
export type ReadCell = number | bigint | string | null;

/**
 * Every row of a table, ordered, with each cell unwrapped (see ReadCell).
 *
 * TIMESTAMP columns are selected as UNIX_MICROS and turned into text here, not by the client:
 * @google-cloud/precise-date 5.2 (which the client uses for int64-microsecond timestamps) reads
 * any instant strictly between 1969-12-31T23:59:59Z and the epoch with the wrong sign (-1 ms comes
 * back as 1970-01-01T00:00:00.999Z). The table holds the right value; only that reader is wrong.
 */
export async function readTable(
  client: BigQuery,
  target: { projectId: string; dataset: string; table: string },
  orderBy: string,
): Promise<Record<string, ReadCell>[]> {
  const [metadata] = await client.dataset(target.dataset).table(target.table).getMetadata();
  const fields = (metadata as { schema?: { fields?: { name: string; type: string }[] } }).schema?.fields ?? [];
  const timestamps = new Set(fields.filter((field) => field.type === 'TIMESTAMP').map((field) => field.name));
  const selected = fields.map(({ name }) => (timestamps.has(name) ? `UNIX_MICROS(\`${name}\`) AS \`${name}\`` : `\`${name}\``));
  const [rows] = await client.query({
    query: `SELECT ${selected.join(', ')} FROM \`${target.projectId}.${target.dataset}.${target.table}\` ORDER BY ${orderBy}`,
    wrapIntegers: true,
  });
  return (rows as Record<string, unknown>[]).map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([name, value]) => {
        const cell = unwrap(value);
        return [name, timestamps.has(name) && cell !== null ? isoFromMicros(cell as bigint) : cell];
      }),
    ),
  );
}

/** Epoch microseconds as `2024-03-01T06:00:00.000Z`, with six fractional digits only when needed. */
export function isoFromMicros(micros: bigint): string {
  const subMilli = ((micros % 1000n) + 1000n) % 1000n;
  const iso = new Date(Number((micros - subMilli) / 1000n)).toISOString();
  return subMilli === 0n ? iso : `${iso.slice(0, -1)}${subMilli.toString().padStart(3, '0')}Z`;
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

/** The tables of a dataset whose names mark them as tilehouse staging tables. */
export async function stagingTables(client: BigQuery, dataset: string): Promise<string[]> {
  const [tables] = await client.dataset(dataset).getTables();
  return tables.map((table) => table.id ?? '').filter((id) => id.startsWith('_tilehouse_staging_'));
}
