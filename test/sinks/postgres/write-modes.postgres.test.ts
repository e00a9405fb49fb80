import { describe, expect, it } from 'vitest';
import { postgresOrSkip, psql, usePostgresDatabase, postgresBlocker } from '../../support/postgres.js';
import { column, postgresSink, runContext, runSink } from './postgres-fixtures.js';
import { describeUnless } from '../../support/skip.js';

const server = postgresOrSkip();

/** The table as psql prints it, ordered: an independent read, not the sink's own client. */
async function tableText(database: string, sql: string): Promise<string[]> {
  return (await psql(server!, database, sql))
    .trim()
    .split('\n')
    .filter((line) => line !== '');
}

const columns = [column('id', 'INT64'), column('title', 'STRING'), column('day', 'DATE'), column('share', 'NUMERIC')];

const routes = [
  { via: 'straight to the server', bouncer: false },
  { via: 'through PgBouncer in transaction pooling', bouncer: true },
];

describeUnless(postgresBlocker(server))('the postgres sink against PostgreSQL 15, each write mode across two runs', () =>
  describe.each(routes)('$via', ({ bouncer }) => {
    const database = usePostgresDatabase(server!);

    it('replace: the table holds exactly the second run, with the view and the grant made after the first still there', async () => {
      const sink = postgresSink(server!, database.name, { table: 'replaced' }, { bouncer });
      await runSink(sink, runContext({ columns, runId: 'r1' }), [
        [
          [1n, 'one', '2024-03-01', '1.5'],
          [2n, 'two', '2024-03-02', null],
        ],
      ]);
      // Roles are the cluster's: named after this block's database.
      const reader = `reader_${database.name}`;
      await psql(
        server!,
        database.name,
        `CREATE VIEW replaced_view AS SELECT id, title FROM replaced; CREATE ROLE ${reader}; GRANT SELECT ON replaced TO ${reader}; COMMENT ON TABLE replaced IS 'kept'`,
      );
      const result = await runSink(sink, runContext({ columns, runId: 'r2' }), [
        [[3n, '', '2024-03-03', '-0.000000001']],
        [[4n, 'tab\there\nnew "line" \\ back', '2024-03-04', '12345678901234567890123456789.123456789']],
      ]);

      expect(result).toMatchObject({ sink: 'postgres', target: 'public.replaced', rows: 2, details: { writeMode: 'replace', deletedRows: 2 } });
      // A second client of the test's own: values as PostgreSQL holds them, '' apart from NULL.
      expect(await database.query('SELECT id::text, title, day::text, share::text FROM replaced ORDER BY id')).toEqual([
        { id: '3', title: '', day: '2024-03-03', share: '-0.000000001' },
        { id: '4', title: 'tab\there\nnew "line" \\ back', day: '2024-03-04', share: '12345678901234567890123456789.123456789' },
      ]);
      expect(await tableText(database.name, 'SELECT count(*) FROM replaced_view')).toEqual(['2']);
      expect(
        await tableText(database.name, `SELECT has_table_privilege('${reader}', 'replaced', 'SELECT'), obj_description('replaced'::regclass, 'pg_class')`),
      ).toEqual(['t|kept']);
    });

    it('append: both runs are in the table, each row with its run id and extraction start', async () => {
      const sink = postgresSink(server!, database.name, { table: 'appended', writeMode: 'append' }, { bouncer });
      await runSink(sink, runContext({ columns, runId: 'a1', startedAt: new Date('2024-03-01T00:00:00Z') }), [[[1n, 'one', '2024-03-01', '1']]]);
      await runSink(sink, runContext({ columns, runId: 'a2', startedAt: new Date('2024-03-02T00:00:00Z') }), [[[1n, 'one again', '2024-03-01', '2']]]);

      expect(
        await tableText(
          database.name,
          "SELECT id || '|' || title || '|' || _run_id || '|' || to_char(_extracted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM appended ORDER BY _run_id",
        ),
      ).toEqual(['1|one|a1|2024-03-01', '1|one again|a2|2024-03-02']);
    });

    it('merge: keys the second run holds are updated, new keys inserted, others kept; unchanged rows keep the run that wrote them', async () => {
      const sink = postgresSink(server!, database.name, { table: 'merged', writeMode: 'merge', primaryKey: ['id'], latestBy: 'day' }, { bouncer });
      await runSink(sink, runContext({ columns, runId: 'm1' }), [
        [
          [1n, 'one', '2024-03-01', '1'],
          [2n, 'two', '2024-03-01', '2'],
          [3n, 'three', '2024-03-01', '3'],
        ],
      ]);
      const second = await runSink(sink, runContext({ columns, runId: 'm2' }), [
        [
          [2n, 'two old', '2024-03-01', '2'],
          [2n, 'two new', '2024-03-05', '22'],
          [3n, 'three', '2024-03-01', '3'],
          [4n, 'four', '2024-03-02', '4'],
        ],
      ]);

      expect(second.details).toMatchObject({ insertedRows: 1, updatedRows: 1 });
      expect(await tableText(database.name, "SELECT id || '|' || title || '|' || share || '|' || _run_id FROM merged ORDER BY id")).toEqual([
        '1|one|1.000000000|m1',
        '2|two new|22.000000000|m2',
        '3|three|3.000000000|m1',
        '4|four|4.000000000|m2',
      ]);
    });

    it('partition: the days of the second run are replaced, the other days kept', async () => {
      const sink = postgresSink(server!, database.name, { table: 'by_day', writeMode: 'partition', partitionBy: { column: 'day' } }, { bouncer });
      await runSink(sink, runContext({ columns, runId: 'p1' }), [
        [
          [1n, 'a', '2024-03-01', '1'],
          [2n, 'b', '2024-03-02', '2'],
          [3n, 'c', '2024-03-03', '3'],
        ],
      ]);
      await runSink(sink, runContext({ columns, runId: 'p2', window: { from: '2024-03-02', to: '2024-03-03' } }), [[[20n, 'b2', '2024-03-02', '20']]]);

      expect(await tableText(database.name, "SELECT id || '|' || day FROM by_day ORDER BY day, id")).toEqual(['1|2024-03-01', '20|2024-03-02', '3|2024-03-03']);
    });
  }),
);
