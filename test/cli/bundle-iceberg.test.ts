// The iceberg sink's catalogs load on demand (descriptor.ts imports neither): a CSV run of the
// shipped bundle loads no chunk holding src/sinks/iceberg/'s catalog code nor pg; a run with an
// iceberg sink on the JDBC catalog loads both. Each chunk's source map names the files it holds.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../support/postgres.js';
import { shippedBundleForAll } from '../support/shipped-bundle.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();
const bundle = shippedBundleForAll('bundle-iceberg');

describeUnless(postgresBlocker(server))('the shipped bundle with an iceberg sink', () => {
  const database = usePostgresDatabase(server!);
  let warehouse = '';
  beforeAll(async () => {
    warehouse = await mkdtemp(path.join(tmpdir(), 'tilehouse-bundle-iceberg-'));
  });
  afterAll(() => rm(warehouse, { recursive: true, force: true }));

  async function runBundled(name: string, sinks: Array<Record<string, unknown>>, configure?: (configFile: string) => Promise<void>) {
    const run = await bundle.runRecorded(
      name,
      sinks,
      configure === undefined ? {} : { configure, env: { ...process.env, [TEST_PASSWORD_VARIABLE]: server!.password } },
    );
    const urls = run.loaded.split('\n').filter(Boolean);
    const chunks = urls.filter((url) => url.startsWith('file:') && url.includes(`/.tmp/${path.basename(bundle.dir)}/`));
    const maps = await Promise.all(chunks.map(async (url) => JSON.parse(await readFile(new URL(`${url}.map`), 'utf8')) as { sources: string[] }));
    const sources = maps.flatMap((map) => map.sources.map((source) => `// ${source.replace(/^(\.\.\/)+/, '')}`));
    return { ...run, loaded: [...urls, ...sources].join('\n') };
  }

  it('commits the table from the bundle, loading the catalog code and pg only then', async () => {
    const remote = await runBundled('bundle-iceberg', [{ type: 'iceberg', table: 'bundled.incidents' }], async (configFile) => {
      const config = parse(await readFile(configFile, 'utf8')) as { sinks: Record<string, unknown> };
      config.sinks.iceberg = {
        catalog: {
          type: 'jdbc',
          catalogName: 'bundle',
          host: server!.host,
          port: server!.port,
          database: database.name,
          user: server!.user,
          password: `\${${TEST_PASSWORD_VARIABLE}}`,
          sslmode: 'disable',
        },
        location: warehouse,
      };
      await writeFile(configFile, stringify(config));
    });
    expect(remote.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(remote.loaded).toContain('// src/sinks/iceberg/jdbc-catalog.ts');
    expect(remote.loaded).toContain('// src/sinks/iceberg/table-writer.ts');
    expect(remote.loaded).toContain('/node_modules/pg/');
    const rows = await database.query<{ metadata_location: string }>("SELECT metadata_location FROM iceberg_tables WHERE table_name = 'incidents'");
    expect(rows).toHaveLength(1);

    const local = await runBundled('bundle-iceberg-csv', [{ type: 'csv' }]);
    expect(local.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(local.loaded).toContain('// src/sinks/iceberg/descriptor.ts');
    for (const module of ['iceberg-sink', 'table-writer', 'rest-catalog', 'jdbc-catalog', 'catalog-settings', 'manifests'])
      expect(local.loaded).not.toContain(`// src/sinks/iceberg/${module}.ts`);
    expect(local.loaded).not.toContain('/node_modules/pg');
  });
});
