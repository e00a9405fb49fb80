// Writer lifecycle against the scripted fake BigQuery API (no emulator needed for these).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BigQueryColumnConflictError, BigQuerySinkStateError, BigQueryValueError } from '../../../src/sinks/bigquery/bigquery-errors.js';
import { apiError, startFakeBigQuery, type FakeBigQuery } from '../../support/bigquery-fake-server.js';
import { column, runContext, sinkHarness, type SinkHarness } from './sink-fixtures.js';

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

    expect(await harness.leftovers()).toEqual([expect.stringMatching(/^tilehouse-open_incidents-run-1234-[0-9a-f]{8}\.ndjson$/)]);
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

  it('removes the temp file when the commit fails, and abort afterwards is harmless', async () => {
    const writer = await harness.sink({}).open(runContext({ columns }));
    await writer.writeRows([['A-1', 1n]]);
    await expect(writer.commit()).rejects.toThrow('refused');

    expect(await harness.leftovers()).toEqual([]);
    await expect(writer.abort()).resolves.toBeUndefined();
  });

  it('refuses rows after commit and a second commit', async () => {
    const own = await startFakeBigQuery();
    const ownHarness = await sinkHarness(own.client(), 'ops');
    try {
      const writer = await ownHarness.sink({}).open(runContext({ columns }));
      await writer.commit();

      await expect(writer.writeRows([['A-1', 1n]])).rejects.toBeInstanceOf(BigQuerySinkStateError);
      await expect(writer.commit()).rejects.toThrow(/commit called on a BigQuery writer that is committed/);
      await expect(writer.abort()).resolves.toBeUndefined();
      expect(own.calls('jobs.insert')).toHaveLength(1);
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
