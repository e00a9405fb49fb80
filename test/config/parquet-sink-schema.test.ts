import { describe, expect, it } from 'vitest';
import { loadEnvironment, loadJob } from '../../src/config/load-config.js';
import { configErrorOf, configFilesEachTest } from '../support/config-files.js';

const job = (sink: string, extra = '') => `name: lake
tile: tile-1
query:
  items:
    - header: Day
      formula: "[incident.created]"
      dataType: datetime
      filters: []
  options:
    pageNumber: 0
    itemsPerPage: 50
sinks:
${sink}
${extra}`;

const ENV = (sinks: string) => `source:
  baseUrl: https://acme.incidents.example.com
  authUrl: https://auth.incidents.example.com
  clientId: \${TILEHOUSE_CLIENT_ID}
  clientSecret: \${TILEHOUSE_CLIENT_SECRET}
${sinks}`;

const files = configFilesEachTest();
const write = files.write;

async function problems(load: Promise<unknown>): Promise<Array<{ field: string; value?: string | undefined; message: string }>> {
  return (await configErrorOf(load)).problems.map(({ field, value, message }) => ({ field, value, message }));
}

describe('a parquet sink in a job file', () => {
  it('defaults to snappy pages and no path of its own', async () => {
    const loaded = await loadJob(await write('jobs/lake.yaml', job('  - type: parquet')));
    expect(loaded.sinks).toEqual([{ type: 'parquet', compression: 'snappy' }]);
  });

  it.each(['snappy', 'zstd', 'gzip', 'none'])('takes compression: %s', async (compression) => {
    const loaded = await loadJob(
      await write('jobs/lake.yaml', job(`  - type: parquet\n    path: gs://lake/{name}/{date}.parquet\n    compression: ${compression}\n    manifest: true`)),
    );
    expect(loaded.sinks[0]).toEqual({ type: 'parquet', path: 'gs://lake/{name}/{date}.parquet', compression, manifest: true });
  });

  it('refuses an unknown codec, a writeMode and a CSV option, naming field and value', async () => {
    expect(await problems(loadJob(await write('jobs/a.yaml', job('  - type: parquet\n    compression: lz4'))))).toEqual([
      expect.objectContaining({ field: 'sinks[0].compression', value: '"lz4"', message: expect.stringMatching(/snappy.*zstd.*gzip.*none/) }),
    ]);
    expect(await problems(loadJob(await write('jobs/b.yaml', job('  - type: parquet\n    writeMode: append'))))).toEqual([
      expect.objectContaining({ field: 'sinks[0].writeMode', message: expect.stringMatching(/a Parquet sink has no writeMode/) }),
    ]);
    expect(await problems(loadJob(await write('jobs/c.yaml', job('  - type: parquet\n    gzip: true'))))).toEqual([
      expect.objectContaining({ field: 'sinks[0].gzip', message: expect.stringMatching(/compresses inside the file.*use compression: gzip/) }),
    ]);
  });

  it('asks an incremental job for {date} in the path and a manifest, as a CSV sink', async () => {
    const incremental = 'incremental:\n  item: Day\n  bucketColumn: Day\n  startFrom: 2026-06-01\n';
    const found = await problems(loadJob(await write('jobs/lake.yaml', job('  - type: parquet\n    path: lake/all.parquet', incremental))));
    expect(found.map((problem) => problem.message)).toEqual(
      expect.arrayContaining([
        'an incremental job writes one file per day: the path needs {date} (or leave it out: {name}/{date}.parquet)',
        'an incremental job tells a finished day by its Parquet manifest: set manifest: true',
      ]),
    );
    await expect(loadJob(await write('jobs/ok.yaml', job('  - type: parquet\n    manifest: true', incremental)))).resolves.toBeDefined();
  });
});

describe('sinks.parquet.directory in the environment', () => {
  it('defaults to out, beside a CSV directory or without one', async () => {
    expect((await loadEnvironment(await write('a.yaml', ENV('')))).sinks.parquet).toEqual({ directory: 'out' });
    expect((await loadEnvironment(await write('b.yaml', ENV('sinks:\n  csv:\n    directory: csv-out\n')))).sinks.parquet).toEqual({ directory: 'out' });
  });

  it('takes a gs:// or s3:// prefix and refuses a URL that is neither, as sinks.csv.directory does', async () => {
    expect((await loadEnvironment(await write('a.yaml', ENV('sinks:\n  parquet:\n    directory: gs://lake/exports\n')))).sinks.parquet.directory).toBe(
      'gs://lake/exports',
    );
    expect((await loadEnvironment(await write('c.yaml', ENV('sinks:\n  parquet:\n    directory: s3://lake/exports\n')))).sinks.parquet.directory).toBe(
      's3://lake/exports',
    );
    const found = await problems(loadEnvironment(await write('b.yaml', ENV('sinks:\n  parquet:\n    directory: az://lake/exports\n'))));
    expect(found).toEqual([expect.objectContaining({ field: 'sinks.parquet.directory', value: '"az://lake/exports"' })]);
  });
});
