// A tile run into PostgreSQL with lineage on: its output dataset is named as the OpenLineage
// naming page names a PostgreSQL table (`postgres://host:port`, `database.schema.table`), which
// the sink's target text (`schema.table`) alone cannot give; the writer names it with its server.
import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { fileTransportEnv, lineageEventsIn } from '../support/lineage-events.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../support/postgres.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();

describeUnless(postgresBlocker(server))('lineage of a run into PostgreSQL', () => {
  const fixture = sandboxAndRootForAll({ incidents: 30 });
  const database = usePostgresDatabase(server!);

  async function run(name: string, sink: Record<string, unknown>, settings: Record<string, unknown> = {}, secret?: string) {
    const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [{ name, tile: SANDBOX_TILE, query: detailQuery, sinks: [sink] }], {
      itemsPerPage: 10,
    });
    const env = await addPostgresSettings(ws.configFile, server!, database.name, settings);
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: { ...sandboxEnv(fixture.sandbox, secret), ...env, ...fileTransportEnv(ws.root) },
    });
    return { result, events: await lineageEventsIn(ws.root) };
  }

  it('names the table postgres://host:port / database.schema.table on START and COMPLETE, with its rows', async () => {
    const { result, events } = await run('pg_lineage', { type: 'postgres', table: 'incidents_lineage' });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(events.map((event) => event.eventType)).toEqual(['START', 'COMPLETE']);
    const complete = events[1]!;
    expect(complete.outputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: `postgres://${server!.host}:${server!.port}`, name: `${database.name}.public.incidents_lineage` },
    ]);
    expect(complete.outputs[0]?.outputFacets?.outputStatistics).toMatchObject({ rowCount: 30 });
  });

  it('names the table it opened on FAIL too, when the publish is refused after the COPY (a merge key the rows share)', async () => {
    // Severity repeats across incidents: a merge on it finds a key twice in the staging table, after the writer opened.
    const { result, events } = await run('pg_lineage_fail', { type: 'postgres', table: 'refused_lineage', writeMode: 'merge', primaryKey: ['severity'] });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('postgres_duplicate_key');
    const failed = events.at(-1)!;
    expect(failed.eventType).toBe('FAIL');
    expect(failed.outputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: `postgres://${server!.host}:${server!.port}`, name: `${database.name}.public.refused_lineage` },
    ]);
  });

  it("through PgBouncer names the pooler's address, and the database's own with lineageNamespace and lineageDatabase", async () => {
    const pooled = await run('pg_lineage_pooled', { type: 'postgres', table: 'pooled_lineage' }, { port: server!.bouncerPort });
    expect(pooled.result.exitCode, pooled.result.stderr).toBe(0);
    expect(pooled.events.at(-1)!.outputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: `postgres://${server!.host}:${server!.bouncerPort}`, name: `${database.name}.public.pooled_lineage` },
    ]);
    const named = await run(
      'pg_lineage_named',
      { type: 'postgres', table: 'named_lineage' },
      { port: server!.bouncerPort, lineageNamespace: 'postgres://DB.Internal:5432', lineageDatabase: 'warehouse' },
    );
    expect(named.result.exitCode, named.result.stderr).toBe(0);
    const complete = named.events.at(-1)!;
    expect(complete.eventType).toBe('COMPLETE');
    // The host as a URL writes it (lower case): one node with other producers' postgres://db.internal:5432.
    expect(complete.outputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([
      { namespace: 'postgres://db.internal:5432', name: 'warehouse.public.named_lineage' },
    ]);
    expect(complete.outputs[0]?.outputFacets?.outputStatistics).toMatchObject({ rowCount: 30 });
  });

  it('a refused token (no table opened): FAIL names the table as a successful run names it on COMPLETE, through the pooler with lineageNamespace too', async () => {
    const settings = { port: server!.bouncerPort, lineageNamespace: `postgres://${server!.host}:${server!.port}`, lineageDatabase: 'warehouse' };
    const sink = { type: 'postgres', table: 'refused_token_lineage' };
    const ok = await run('pg_token_ok', sink, settings);
    expect(ok.result.exitCode, ok.result.stderr).toBe(0);
    const completed = ok.events
      .find((event) => event.eventType === 'COMPLETE')!
      .outputs.map(({ namespace, name, facets }) => ({ namespace, name, facets: { dataSource: facets?.dataSource } }));
    const serverNamespace = `postgres://${server!.host}:${server!.port}`;
    expect(completed).toEqual([
      {
        namespace: serverNamespace,
        name: 'warehouse.public.refused_token_lineage',
        facets: { dataSource: expect.objectContaining({ name: serverNamespace, uri: serverNamespace }) },
      },
    ]);

    const refused = await run('pg_token_refused', sink, settings, 'not-the-secret');
    expect(refused.result.exitCode).toBe(1);
    const fail = refused.events.at(-1)!;
    expect(fail.eventType).toBe('FAIL');
    expect(fail.run.facets.tilehouse).toMatchObject({ status: 'failed', errorCode: 'auth_invalid_client' });
    // Named with its source only: no schema, no statistics (docs/lineage.md's rule for a target the try did not write).
    expect(fail.outputs).toEqual(completed);
  });

  it('a password whose variable is not set (refused before any connection): FAIL still names the table by the host, port and database the settings give', async () => {
    delete process.env.TILEHOUSE_TEST_UNSET_PG_PASSWORD;
    const { result, events } = await run(
      'pg_unset_password',
      { type: 'postgres', table: 'unset_password_lineage' },
      { password: '${TILEHOUSE_TEST_UNSET_PG_PASSWORD}' },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('TILEHOUSE_TEST_UNSET_PG_PASSWORD is not set');
    const fail = events.at(-1)!;
    expect(fail.eventType).toBe('FAIL');
    const namespace = `postgres://${server!.host}:${server!.port}`;
    expect(fail.outputs).toEqual([
      {
        namespace,
        name: `${database.name}.public.unset_password_lineage`,
        facets: { dataSource: expect.objectContaining({ name: namespace, uri: namespace }) },
      },
    ]);
  });
});
