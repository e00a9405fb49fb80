import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import pg from 'pg';
import type { RunningMotoS3 } from './moto.js';
import type { RunningPostgresBench } from './postgres.js';

/** An Iceberg table of the bench's JDBC catalog (on the bench's PostgreSQL). */
export interface BenchIcebergTable {
  catalogName: string;
  namespace: string;
  name: string;
}

function client(server: RunningPostgresBench): pg.Client {
  return new pg.Client({ host: server.host, port: server.port, user: server.user, password: server.password, database: server.database });
}

/** The table's current metadata file, as the catalog's `iceberg_tables` row names it (undefined: no such table). */
async function metadataLocation(server: RunningPostgresBench, table: BenchIcebergTable): Promise<string | undefined> {
  const reader = client(server);
  await reader.connect();
  try {
    const { rows } = await reader.query('SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3', [
      table.catalogName,
      table.namespace,
      table.name,
    ]);
    return (rows[0] as { metadata_location?: string } | undefined)?.metadata_location;
  } finally {
    await reader.end();
  }
}

/** A `file:` URI or absolute path, or an `s3://` object of the bench's moto bucket. */
async function readMetadataFile(location: string, s3: RunningMotoS3 | undefined): Promise<string> {
  if (location.startsWith('/')) return readFile(location, 'utf8');
  if (location.startsWith('file:')) return readFile(fileURLToPath(location), 'utf8');
  const match = /^s3:\/\/([^/]+)\/(.+)$/.exec(location);
  if (match && s3) {
    const answer = await s3.client.send(new GetObjectCommand({ Bucket: match[1], Key: match[2] }));
    return answer.Body!.transformToString('utf8');
  }
  throw new Error(`the bench cannot read the Iceberg metadata file ${location}`);
}

/**
 * The rows the table holds now: `total-records` of its current snapshot's summary, in the metadata
 * file the catalog points at (no data file read). Undefined when the catalog has no such table or
 * it has no current snapshot.
 */
export async function icebergTotalRecords(server: RunningPostgresBench, table: BenchIcebergTable, s3?: RunningMotoS3): Promise<number | undefined> {
  const location = await metadataLocation(server, table);
  if (location === undefined) return undefined;
  // Snapshot ids are 63-bit: compare them as the text the file holds, not as JSON numbers.
  const text = await readMetadataFile(location, s3);
  const current = /"current-snapshot-id"\s*:\s*(-?\d+)/.exec(text)?.[1];
  const metadata = JSON.parse(text.replace(/("(?:snapshot-id|current-snapshot-id|parent-snapshot-id)"\s*:\s*)(-?\d+)/g, '$1"$2"')) as {
    snapshots?: Array<{ 'snapshot-id': string; summary?: Record<string, string> }>;
  };
  const snapshot = metadata.snapshots?.find((candidate) => candidate['snapshot-id'] === current);
  const total = snapshot?.summary?.['total-records'];
  return total === undefined ? undefined : Number(total);
}

/** The catalog's row of the table removed (its files go with the bench's temp directory or bucket prefix). */
export async function dropIcebergCatalogRow(server: RunningPostgresBench, table: BenchIcebergTable): Promise<void> {
  const writer = client(server);
  await writer.connect();
  try {
    await writer.query('DELETE FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = $2 AND table_name = $3', [
      table.catalogName,
      table.namespace,
      table.name,
    ]);
  } finally {
    await writer.end();
  }
}
