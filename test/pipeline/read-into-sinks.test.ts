import { describe, expect, it } from 'vitest';
import type { LoadedJob } from '../../src/config/load-config.js';
import { inPublishOrder, readIntoSinks } from '../../src/pipeline/read-into-sinks.js';
import type { ExportPage } from '../../src/source/export-endpoint/index.js';
import { FakeSink, silentLogger, type FakeWriterOptions } from '../support/fake-sinks.js';

const job: LoadedJob = {
  name: 'weekly',
  tile: 'tile-1',
  file: 'weekly.yaml',
  timezone: 'UTC',
  query: { items: [], options: {} },
  sinks: [{ type: 'csv', gzip: false }],
  columns: { Number: { type: 'INT64' } },
  onInvalidValue: 'fail',
} as unknown as LoadedJob;

const headers = ['Number', 'Name', 'Created'];
const dataTypes = ['number', 'text', 'datetime'];

function page(pageNumber: number, rows: unknown[][], totalRows = 5): ExportPage {
  return {
    pageNumber,
    navigation: { hasPrev: pageNumber > 0, hasNext: (pageNumber + 1) * 2 < totalRows, rowsCount: rows.length, totalRows },
    headers,
    dataTypes,
    rows,
  };
}

const PAGES = [
  page(0, [
    [1, 'one', 1_767_225_600_000],
    [2, 'two', null],
  ]),
  page(1, [
    [3, 'three', 0],
    [4, null, 1],
  ]),
  page(2, [[5, 'five', 2]]),
];

async function* pagesOf(pages: ExportPage[], failAfter?: { page: number; error: Error }): AsyncGenerator<ExportPage> {
  for (const p of pages) {
    yield p;
    if (failAfter?.page === p.pageNumber) throw failAfter.error;
  }
}

function sinks(log: string[], specs: Array<[string, number, (FakeWriterOptions & { failOpen?: boolean })?]>): FakeSink[] {
  return specs.map(([target, rank, options]) => new FakeSink(target, rank, log, options));
}

const context = { runId: 'run-1', startedAt: new Date('2026-11-21T00:00:00Z') };

describe('inPublishOrder', () => {
  it('sorts by publishRank, keeping the configured order for equal ranks', () => {
    const log: string[] = [];
    const order = inPublishOrder(
      sinks(log, [
        ['a', 10],
        ['b', 0],
        ['c', 10],
        ['d', 5],
      ]),
    );
    expect(order.map((s) => (s as FakeSink).target)).toEqual(['b', 'd', 'a', 'c']);
  });
});

describe('readIntoSinks', () => {
  it("opens the writers on page 0 in publish order, then writes each page's typed rows to each", async () => {
    const log: string[] = [];
    const [csv, bq] = sinks(log, [
      ['out.csv', 10],
      ['project.ds.table', 0],
    ]);
    const { stats, writers } = await readIntoSinks(pagesOf(PAGES), { job, sinks: [csv!, bq!], logger: silentLogger, context });
    expect(writers.map((w) => w.target)).toEqual(['project.ds.table', 'out.csv']);
    expect(log).toEqual(['open project.ds.table', 'open out.csv', ...[0, 1, 2].flatMap(() => ['writeRows project.ds.table', 'writeRows out.csv'])]);
    expect(csv!.opened[0]).toMatchObject({ jobName: 'weekly', tileId: 'tile-1', runId: 'run-1', startedAt: context.startedAt });
    expect(csv!.opened[0]!.columns.map((c) => [c.header, c.type])).toEqual([
      ['Number', 'INT64'],
      ['Name', 'STRING'],
      ['Created', 'TIMESTAMP'],
    ]);
    const expected = [
      [
        [1n, 'one', 1_767_225_600_000],
        [2n, 'two', null],
      ],
      [
        [3n, 'three', 0],
        [4n, null, 1],
      ],
      [[5n, 'five', 2]],
    ];
    expect(csv!.writers[0]!.rows).toEqual(expected);
    expect(bq!.writers[0]!.rows).toEqual(expected);
    expect(stats).toMatchObject({ rows: 5, rowsDropped: 0, pages: 3, nulledValues: 0 });
    // Nothing was prepared, published or aborted: that is publishAll's job.
    expect(log.some((line) => /^(prepare|publish|abort)/.test(line))).toBe(false);
  });

  it('applies selectRows to raw rows before typing and counts the dropped ones', async () => {
    const log: string[] = [];
    const [csv] = sinks(log, [['out.csv', 10]]);
    const { stats } = await readIntoSinks(pagesOf(PAGES), {
      job,
      sinks: [csv!],
      logger: silentLogger,
      context,
      selectRows: (h) => {
        const index = h.indexOf('Number');
        return (row) => (row[index] as number) % 2 === 1;
      },
    });
    expect(csv!.writers[0]!.rows.flat().map((row) => row[0])).toEqual([1n, 3n, 5n]);
    expect(stats).toMatchObject({ rows: 3, rowsDropped: 2, pages: 3 });
  });

  it('aborts every opened writer when the source fails mid-stream, and rethrows', async () => {
    const log: string[] = [];
    const all = sinks(log, [
      ['a.csv', 10],
      ['b.csv', 10],
    ]);
    const error = new Error('connection reset on page 2');
    await expect(readIntoSinks(pagesOf(PAGES, { page: 1, error }), { job, sinks: all, logger: silentLogger, context })).rejects.toBe(error);
    expect(log.slice(-2)).toEqual(['abort a.csv', 'abort b.csv']);
    expect(all.map((s) => s.writers[0]!.rows.length)).toEqual([2, 2]);
  });

  it('aborts every opened writer when a value does not parse, and names the page', async () => {
    const log: string[] = [];
    const all = sinks(log, [['a.csv', 10]]);
    const bad = [
      PAGES[0]!,
      page(1, [
        [3, 'three', 0],
        ['not a number', 'x', 1],
      ]),
    ];
    await expect(readIntoSinks(pagesOf(bad), { job, sinks: all, logger: silentLogger, context })).rejects.toMatchObject({
      code: 'value_invalid',
      message: expect.stringMatching(/page 1/),
    });
    expect(log.at(-1)).toBe('abort a.csv');
    expect(all[0]!.writers[0]!.rows).toHaveLength(1);
  });

  it('aborts the writers opened so far when a later sink fails to open', async () => {
    const log: string[] = [];
    const all = sinks(log, [
      ['first', 0],
      ['second', 10, { failOpen: true }],
    ]);
    await expect(readIntoSinks(pagesOf(PAGES), { job, sinks: all, logger: silentLogger, context })).rejects.toThrow('second open failed');
    expect(log).toEqual(['open first', 'open second', 'abort first']);
  });

  it('aborts every writer when one writer fails to write', async () => {
    const log: string[] = [];
    const all = sinks(log, [
      ['bq', 0, { failIn: ['writeRows'] }],
      ['a.csv', 10],
    ]);
    await expect(readIntoSinks(pagesOf(PAGES), { job, sinks: all, logger: silentLogger, context })).rejects.toThrow('bq writeRows failed');
    expect(log).toEqual(['open bq', 'open a.csv', 'writeRows bq', 'abort bq', 'abort a.csv']);
  });
});
