import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { BENCH_JOB_NAME, BENCH_QUERY } from '../bench-query.js';
import type { SourceEndpoint } from './source-requests.js';

export interface BenchWorkspace {
  configFile: string;
  jobsDir: string;
  outDir: string;
  tempDir: string;
  /** The environment a tilehouse process needs: the credentials its config refers to. */
  env: NodeJS.ProcessEnv;
}

export type BenchSink =
  | { type: 'csv' }
  /** The CSV sink with `gzip: true`, a local file. */
  | { type: 'csv'; gzip: true }
  /** CSV into Cloud Storage: the CSV directory is `gs://bucket/prefix`, the server STORAGE_EMULATOR_HOST. */
  | { type: 'csv'; directory: string; storageEmulatorHost: string }
  /** CSV into S3: the CSV directory is `s3://bucket/prefix`, the server `sinks.s3.endpoint`, credentials in the environment. */
  | { type: 'csv'; directory: string; s3Endpoint: string; awsEnv: Record<string, string> }
  | { type: 'bigquery'; projectId: string; dataset: string }
  /** The Parquet sink into a local file under outDir. */
  | { type: 'parquet' }
  /** The Parquet sink into S3: the Parquet directory is `s3://bucket/prefix`, the server `sinks.s3.endpoint`, credentials in the environment. */
  | { type: 'parquet'; directory: string; s3Endpoint: string; awsEnv: Record<string, string> }
  /**
   * An Iceberg table `table` (namespace.table, replace) in the JDBC catalog `catalogName` on a
   * loopback PostgreSQL (the password by reference), new tables under `location`: a local
   * directory, or `s3://bucket/prefix` with the server `sinks.s3.endpoint` and credentials in the environment.
   */
  | {
      type: 'iceberg';
      table: string;
      catalogName: string;
      host: string;
      port: number;
      database: string;
      user: string;
      passwordEnv: Record<string, string>;
      location: string;
      s3Endpoint?: string;
      awsEnv?: Record<string, string>;
    }
  /** A PostgreSQL table on a loopback server, the password by reference from the environment. */
  | { type: 'postgres'; host: string; port: number; database: string; user: string; passwordEnv: Record<string, string> };

/** An environment config and one job (the bench query on SANDBOX_TILE) written into `root`. */
export async function writeBenchWorkspace(
  root: string,
  endpoint: SourceEndpoint,
  settings: { concurrency: number; itemsPerPage: number; sink: BenchSink },
): Promise<BenchWorkspace> {
  const jobsDir = join(root, 'jobs');
  const outDir = join(root, 'out');
  const tempDir = join(root, 'tmp');
  await mkdir(jobsDir, { recursive: true });
  const { sink } = settings;
  const environment = {
    source: {
      baseUrl: endpoint.url,
      authUrl: endpoint.authUrl ?? endpoint.url,
      clientId: '${BENCH_CLIENT_ID}',
      clientSecret: '${BENCH_CLIENT_SECRET}',
      itemsPerPage: settings.itemsPerPage,
      concurrency: settings.concurrency,
    },
    sinks: {
      csv: { directory: sink.type === 'csv' && 'directory' in sink ? sink.directory : outDir },
      ...(sink.type === 'parquet' ? { parquet: { directory: 'directory' in sink ? sink.directory : outDir } } : {}),
      ...('s3Endpoint' in sink && sink.s3Endpoint !== undefined ? { s3: { endpoint: sink.s3Endpoint } } : {}),
      ...(sink.type === 'bigquery' ? { bigquery: { projectId: sink.projectId, dataset: sink.dataset, location: 'US' } } : {}),
      ...(sink.type === 'postgres'
        ? { postgres: { host: sink.host, port: sink.port, database: sink.database, user: sink.user, password: '${BENCH_PG_PASSWORD}', sslmode: 'disable' } }
        : {}),
      ...(sink.type === 'iceberg'
        ? {
            iceberg: {
              catalog: {
                type: 'jdbc',
                catalogName: sink.catalogName,
                host: sink.host,
                port: sink.port,
                database: sink.database,
                user: sink.user,
                password: '${BENCH_PG_PASSWORD}',
                sslmode: 'disable',
              },
              location: sink.location,
            },
          }
        : {}),
    },
    tempDirectory: tempDir,
  };
  const configFile = join(root, 'env.yaml');
  await writeFile(configFile, stringify(environment));
  const job = {
    name: BENCH_JOB_NAME,
    tile: endpoint.tileId,
    query: BENCH_QUERY,
    sinks: [
      sink.type === 'csv'
        ? { type: 'csv', ...('gzip' in sink ? { gzip: true } : {}) }
        : sink.type === 'parquet'
          ? { type: 'parquet' }
          : sink.type === 'postgres'
            ? { type: 'postgres', writeMode: 'replace' }
            : sink.type === 'iceberg'
              ? { type: 'iceberg', table: sink.table, writeMode: 'replace' }
              : { type: 'bigquery', writeMode: 'replace' },
    ],
  };
  await writeFile(join(jobsDir, `${BENCH_JOB_NAME}.yaml`), stringify(job));
  return {
    configFile,
    jobsDir,
    outDir,
    tempDir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      BENCH_CLIENT_ID: endpoint.clientId,
      BENCH_CLIENT_SECRET: endpoint.clientSecret,
      ...('storageEmulatorHost' in sink ? { STORAGE_EMULATOR_HOST: sink.storageEmulatorHost } : {}),
      ...('awsEnv' in sink && sink.awsEnv !== undefined ? sink.awsEnv : {}),
      ...('passwordEnv' in sink ? sink.passwordEnv : {}),
    },
  };
}
