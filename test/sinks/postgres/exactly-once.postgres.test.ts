import { afterAll, beforeAll, expect, it } from 'vitest';
import { postgresOrSkip, usePostgresDatabase, postgresBlocker } from '../../support/postgres.js';
import { type PostgresProxy, startPostgresProxy } from '../../support/postgres-proxy.js';
import { formatOwnerTag } from '../../../src/temp-owner.js';
import { column, postgresSink, prepareSink, runContext, runSink, silentLogger } from './postgres-fixtures.js';
import { describeUnless } from '../../support/skip.js';

const server = postgresOrSkip();
const columns = [column('id', 'INT64'), column('title', 'STRING')];

describeUnless(postgresBlocker(server))('the postgres sink publishes each run exactly once (PostgreSQL 15)', () => {
  const database = usePostgresDatabase(server!);
  let proxy: PostgresProxy;

  beforeAll(async () => {
    proxy = await startPostgresProxy({ host: server!.host, port: server!.port });
  });
  afterAll(async () => {
    await proxy.stop();
  });

  const rowsOf = (table: string) => database.query<{ id: string; title: string }>(`SELECT id::text, title FROM "${table}" ORDER BY id`);
  const ledgerOf = (table: string) =>
    database.query<{ run_id: string; rows: string; job: string; write_mode: string }>(
      'SELECT run_id, rows::text, job, write_mode FROM _tilehouse_runs WHERE target_table = $1 ORDER BY published_at',
      [`public.${table}`],
    );
  const stagingTables = async () =>
    (await database.query<{ relname: string }>("SELECT relname FROM pg_class WHERE relname LIKE '\\_tilehouse\\_stage\\_%'")).map((row) => row.relname);

  it('writes one ledger row per publish, in the publishing transaction', async () => {
    const sink = postgresSink(server!, database.name, { table: 'ledgered', writeMode: 'append' });
    await runSink(sink, runContext({ columns, runId: 'l1' }), [[[1n, 'a']]]);
    await runSink(sink, runContext({ columns, runId: 'l2' }), [
      [
        [2n, 'b'],
        [3n, 'c'],
      ],
    ]);

    expect(await ledgerOf('ledgered')).toEqual([
      { run_id: 'l1', rows: '1', job: 'open_incidents', write_mode: 'append' },
      { run_id: 'l2', rows: '2', job: 'open_incidents', write_mode: 'append' },
    ]);
    expect(await stagingTables()).toEqual([]);
  });

  it('publishes nothing again for a run id the ledger holds, and says the earlier publish was kept when its rows differ', async () => {
    const sink = postgresSink(server!, database.name, { table: 'rerun', writeMode: 'append' });
    await runSink(sink, runContext({ columns, runId: 'same' }), [[[1n, 'first']]]);
    const again = await runSink(sink, runContext({ columns, runId: 'same' }), [
      [
        [1n, 'first'],
        [2n, 'second'],
      ],
    ]);

    expect(again).toMatchObject({ rows: 1, keptEarlierPublish: true, details: { adopted: true } });
    expect(await rowsOf('rerun')).toEqual([{ id: '1', title: 'first' }]);
    expect(await ledgerOf('rerun')).toHaveLength(1);
    expect(await stagingTables()).toEqual([]);
  });

  it('judges a COMMIT whose answer was lost by the ledger: the server committed, the retry publishes nothing again', async () => {
    const sink = postgresSink(server!, database.name, { table: 'lost_commit', writeMode: 'append' }, { settings: { port: proxy.port } });
    const writer = await prepareSink(sink, runContext({ columns, runId: 'lc' }), [[[1n, 'once']]]);
    let armed = true;
    proxy.rule((message) => {
      // The publish's COMMIT (prepare's went through before the rule was set).
      if (armed && message.text === 'COMMIT') {
        armed = false;
        return 'cut-after';
      }
      return 'pass';
    });
    const cutsBefore = proxy.cuts;
    const result = await writer.publish();
    proxy.rule(() => 'pass');

    expect(proxy.cuts).toBe(cutsBefore + 1);
    expect(result).toMatchObject({ rows: 1, details: { adopted: true, tries: 2 } });
    expect(await rowsOf('lost_commit')).toEqual([{ id: '1', title: 'once' }]);
    expect(await ledgerOf('lost_commit')).toHaveLength(1);
  });

  it('publishes on the next try when the connection broke before the COMMIT reached the server', async () => {
    const sink = postgresSink(server!, database.name, { table: 'cut_commit', writeMode: 'append' }, { settings: { port: proxy.port } });
    const writer = await prepareSink(sink, runContext({ columns, runId: 'cc' }), [[[1n, 'once']]]);
    let armed = true;
    proxy.rule((message) => {
      if (armed && message.text === 'COMMIT') {
        armed = false;
        return 'cut-before';
      }
      return 'pass';
    });
    const result = await writer.publish();
    proxy.rule(() => 'pass');

    expect(result).toMatchObject({ rows: 1, details: { tries: 2 } });
    expect(result.details?.adopted).toBeUndefined();
    expect(await rowsOf('cut_commit')).toEqual([{ id: '1', title: 'once' }]);
  });

  it('publishes nothing and leaves no staging table when the connection breaks during COPY', async () => {
    const sink = postgresSink(server!, database.name, { table: 'cut_copy' });
    await runSink(sink, runContext({ columns, runId: 'before' }), [[[1n, 'previous']]]);
    const viaProxy = postgresSink(server!, database.name, { table: 'cut_copy' }, { settings: { port: proxy.port } });
    let copied = 0;
    proxy.rule((message) => {
      if (message.type === 'd') copied += 1;
      return message.type === 'd' && copied === 3 ? 'cut-before' : 'pass';
    });
    const page = Array.from({ length: 5_000 }, (_, index) => [BigInt(index), `row ${index} ${'x'.repeat(40)}`]);
    const failed = prepareSink(viaProxy, runContext({ columns, runId: 'cut' }), [page, page.map(([id]) => [(id as bigint) + 5000n, 'y'.repeat(60)]), page]);

    await expect(failed).rejects.toMatchObject({ code: 'postgres_connection_failed' });
    proxy.rule(() => 'pass');
    expect(await rowsOf('cut_copy')).toEqual([{ id: '1', title: 'previous' }]);
    // The staging table was created in the COPY's transaction: the server rolled it back with it.
    await expect.poll(stagingTables).toEqual([]);
  });

  it("sweeps staging tables whose run is gone (a day old), and keeps a live run's and tables it did not make", async () => {
    const note = (createdAt: string) => JSON.stringify({ tilehouse: 'staging', owner: formatOwnerTag(), createdAt }).replaceAll("'", "''");
    await database.query(`CREATE TABLE _tilehouse_stage_old_1 (id bigint); COMMENT ON TABLE _tilehouse_stage_old_1 IS '${note('2020-01-01T00:00:00Z')}'`);
    await database.query(`CREATE TABLE _tilehouse_stage_live_1 (id bigint); COMMENT ON TABLE _tilehouse_stage_live_1 IS '${note(new Date().toISOString())}'`);
    await database.query('CREATE TABLE _tilehouse_stage_someone_elses (id bigint)');

    const removed = await postgresSink(server!, database.name, { table: 'swept' }).sweep(silentLogger);

    expect(removed).toEqual(['public._tilehouse_stage_old_1']);
    expect((await stagingTables()).sort()).toEqual(['_tilehouse_stage_live_1', '_tilehouse_stage_someone_elses']);
    await database.query('DROP TABLE _tilehouse_stage_live_1, _tilehouse_stage_someone_elses');
  });
});
