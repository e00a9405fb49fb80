import { expect, it } from 'vitest';
import { addPostgresSettings, postgresOrSkip, psql, usePostgresDatabase, postgresBlocker } from '../support/postgres.js';
import { shippedBundleForAll } from '../support/shipped-bundle.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();
const bundle = shippedBundleForAll('bundle-postgres');

describeUnless(postgresBlocker(server))('the shipped bundle with a postgres sink', () => {
  // pg and pg-copy-streams stay in node_modules (scripts/bundle.mjs), imported only by a postgres
  // sink: a CSV run's cold start must not pay for them. The resolve hook records what each run loads.
  const database = usePostgresDatabase(server!);

  it('loads the table from the bundle, loading pg only then', async () => {
    const remote = await bundle.runRecorded('bundle-postgres', [{ type: 'postgres', table: 'from_bundle' }], {
      configure: async (configFile) => {
        await addPostgresSettings(configFile, server!, database.name);
      },
    });
    expect(remote.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(remote.loaded).toContain('/node_modules/pg/');
    expect(remote.loaded).toContain('/node_modules/pg-copy-streams/');
    expect((await psql(server!, database.name, 'SELECT count(*) FROM from_bundle')).trim()).toBe('150');

    const local = await bundle.runRecorded('bundle-csv', [{ type: 'csv' }]);
    expect(local.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(local.loaded).not.toContain('/node_modules/pg');
  });
});
