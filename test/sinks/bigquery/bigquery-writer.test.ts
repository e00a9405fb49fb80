// Writer lifecycle against the scripted fake BigQuery API (no emulator needed for these).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BigQueryColumnConflictError, BigQuerySinkStateError, BigQueryValueError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import { apiError, FAKE_PROJECT_ID, jobIdOf, jobResource, startFakeBigQuery, type FakeBigQuery } from '../../support/bigquery-fake-server.js';
import { column, runContext, sinkHarness, type SinkHarness } from './sink-fixtures.js';
import { waitUntil } from '../../support/wait-until.js';

const columns = [column('incident', 'STRING'), column('count', 'INT64')];

describe('BigQueryWriter', () => {
  let fake: FakeBigQuery;
  let harness: SinkHarness;

  beforeEach(async () => {
    fake = await startFakeBigQuery({ 'jobs.insert': (_, attempt) => (attempt === 1 ? apiError(400, 'invalid', 'refused') : apiError(500, 'x', 'unexpected')) });
    harness = await sinkHarness(fake.client(), 'ops');
  });

  afterEach(async () => {
    await harness.cleanup();
    await fake.close();
  });

  it('writes pages to a temp file named after the job and run, in the temp directory', async () => {
    const writer = await harness.sink({}).open(runContext({ columns, runId: 'run-1234' }));
    await writer.writeRows([['A-1', 1n]]);

    // The rest of the name (random part, owner tag) is ndjson-file.ts's business.
    expect(await harness.leftovers()).toEqual([expect.stringMatching(/^tilehouse-open_incidents-run-1234-.+\.ndjson$/)]);
    await writer.abort();
    expect(await harness.leftovers()).toEqual([]);
  });

  it('streams a large run page by page into one upload', async () => {
    const own = await startFakeBigQuery();
    const ownHarness = await sinkHarness(own.client(), 'ops');
    try {
      const page = Array.from({ length: 5_000 }, (_, index) => [`A-${index}`, BigInt(index)]);
      const result = await ownHarness.run(ownHarness.sink({}), runContext({ columns }), Array(8).fill(page));

      expect(result.rows).toBe(40_000);
      const lines = own.calls('jobs.insert')[0]?.upload?.split('\n') ?? [];
      expect(lines).toHaveLength(40_001);
      expect(lines[39_999]).toBe('{"incident":"A-4999","count":"4999"}');
    } finally {
      await ownHarness.cleanup();
      await own.close();
    }
  });

  it('removes the temp file when a value cannot be encoded, and the pipeline aborts', async () => {
    const writer = await harness.sink({}).open(runContext({ columns }));
    await expect(writer.writeRows([['A-1', 1.5]])).rejects.toBeInstanceOf(BigQueryValueError);
    await writer.abort();

    expect(await harness.leftovers()).toEqual([]);
    expect(fake.calls('jobs.insert')).toHaveLength(0);
  });

  it('removes the temp file when prepare fails, and abort afterwards is harmless', async () => {
    const writer = await harness.sink({}).open(runContext({ columns }));
    await writer.writeRows([['A-1', 1n]]);
    await expect(writer.prepare()).rejects.toThrow('refused');

    expect(await harness.leftovers()).toEqual([]);
    await expect(writer.abort()).resolves.toBeUndefined();
    await expect(writer.abort()).resolves.toBeUndefined();
    // One delete of the staging table, however often abort is called.
    expect(fake.calls('tables.delete')).toHaveLength(1);
  });

  it('removes the temp file once prepare has loaded it, before publish', async () => {
    const own = await startFakeBigQuery();
    const ownHarness = await sinkHarness(own.client(), 'ops');
    try {
      const writer = await ownHarness.sink({}).open(runContext({ columns }));
      await writer.writeRows([['A-1', 1n]]);
      await writer.prepare();

      expect(await ownHarness.leftovers()).toEqual([]);
      expect(own.calls('jobs.copy')).toHaveLength(0);
    } finally {
      await ownHarness.cleanup();
      await own.close();
    }
  });

  it('names its target before anything is written', async () => {
    const writer = await harness
      .sink({ table: 'daily', writeMode: 'partition' })
      .open(runContext({ columns, window: { from: '2024-01-05', to: '2024-01-06' } }));

    expect(writer.target).toBe(`${FAKE_PROJECT_ID}.ops.daily$20240105`);
    await writer.abort();
  });

  it('refuses rows after prepare, publish before prepare, and a second publish', async () => {
    const own = await startFakeBigQuery();
    const ownHarness = await sinkHarness(own.client(), 'ops');
    try {
      const writer = await ownHarness.sink({}).open(runContext({ columns }));
      // The job and the table, as the file sinks' writers say it.
      const misuse = (operation: string, state: string) => `job open_incidents: bigquery ${writer.target}: ${operation} called on a writer that is ${state}`;
      await expect(writer.publish()).rejects.toThrow(misuse('publish', 'open'));
      await writer.prepare();

      await expect(writer.writeRows([['A-1', 1n]])).rejects.toBeInstanceOf(BigQuerySinkStateError);
      await expect(writer.prepare()).rejects.toThrow(misuse('prepare', 'prepared'));
      await writer.publish();
      await expect(writer.publish()).rejects.toThrow(misuse('publish', 'published'));
      await expect(writer.abort()).resolves.toBeUndefined();
      expect(own.calls('jobs.insert')).toHaveLength(1);
      expect(own.calls('jobs.copy')).toHaveLength(1);
    } finally {
      await ownHarness.cleanup();
      await own.close();
    }
  });

  it('aborted while prepare waits for the load (no signal): prepare stops, the load is cancelled, the staging table deleted', async () => {
    const own = await startFakeBigQuery({
      'jobs.insert': (request) => jobResource(jobIdOf(request), 'RUNNING'),
      'jobs.get': (request) => jobResource(jobIdOf(request), 'RUNNING'),
    });
    const ownHarness = await sinkHarness(own.client(), 'ops');
    try {
      const writer = await ownHarness.sink({}).open(runContext({ columns, runId: 'r5' }));
      const preparing = writer.prepare();
      const failed = expect(preparing).rejects.toThrow(/aborted/);
      await waitUntil(() => own.calls('jobs.get').length > 0, 'the load job was never polled', { everyMs: 5 });

      await writer.abort();
      await failed;
      expect(own.calls('jobs.cancel').map(jobIdOf)).toEqual(['tilehouse_open_incidents_ops_open_incidents_r5_load']);
      expect(own.calls('tables.delete')).toHaveLength(1);
      expect(own.calls('jobs.copy')).toHaveLength(0);
      expect(await ownHarness.leftovers()).toEqual([]);
    } finally {
      await ownHarness.cleanup();
      await own.close();
    }
  });

  it('in append mode, refuses a tile column named like a lineage column', async () => {
    const open = harness.sink({ writeMode: 'append' }).open(runContext({ columns: [...columns, column('_RUN_ID', 'STRING')] }));

    await expect(open).rejects.toBeInstanceOf(BigQueryColumnConflictError);
    await expect(open).rejects.toThrow(/column _RUN_ID clashes with the lineage column/);
    expect(await harness.leftovers()).toEqual([]);
  });
});
