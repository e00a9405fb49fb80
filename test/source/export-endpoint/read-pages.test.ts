import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { ExportPage } from '../../../src/source/export-endpoint/export-response.js';
import { AdaptiveConcurrency } from '../../../src/source/adaptive-concurrency.js';
import { readPages, type PageFetcher } from '../../../src/source/export-endpoint/read-pages.js';
import { ExportPageMismatchError } from '../../../src/source/export-endpoint/export-errors.js';

/** A fake source: `totalRows` rows served `pageSize` at a time, with a chosen delay per page. */
class FakeSource implements PageFetcher {
  inFlight = 0;
  maxInFlight = 0;
  requested: number[] = [];
  constructor(
    readonly totalRows: number,
    readonly pageSize: number,
    readonly delayOf: (page: number) => number = () => 0,
  ) {}

  /** The consumer's page when each page's `whenNeeded` said it was needed; pages it dropped. */
  neededAt = new Map<number, number>();
  dropped: number[] = [];
  consumerAt = -1;

  async fetchPage(pageNumber: number, _gate?: unknown, whenNeeded?: Promise<boolean>): Promise<ExportPage> {
    this.requested.push(pageNumber);
    void whenNeeded?.then((isNeeded) => (isNeeded ? this.neededAt.set(pageNumber, this.consumerAt) : this.dropped.push(pageNumber)));
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await sleep(this.delayOf(pageNumber));
    this.inFlight -= 1;
    const first = pageNumber * this.pageSize;
    const count = Math.max(0, Math.min(this.pageSize, this.totalRows - first));
    return {
      pageNumber,
      headers: ['n'],
      dataTypes: ['number'],
      rows: Array.from({ length: count }, (_, i) => [first + i]),
      navigation: { hasPrev: pageNumber > 0, hasNext: first + count < this.totalRows, rowsCount: count, totalRows: this.totalRows },
    };
  }
}

async function collect(pages: AsyncIterable<ExportPage>, perPage: () => Promise<void> = async () => {}): Promise<number[]> {
  const values: number[] = [];
  for await (const page of pages) {
    await perPage();
    for (const row of page.rows) values.push(row[0] as number);
  }
  return values;
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('readPages', () => {
  it('reads sequentially until hasNext is false', async () => {
    const source = new FakeSource(7, 3);
    expect(await collect(readPages(source, { jobName: 'j', itemsPerPage: 3 }))).toEqual(range(7));
    expect(source.requested).toEqual([0, 1, 2]);
  });

  it('yields pages in order although random delays finish them out of order', async () => {
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const source = new FakeSource(1000, 10, () => Math.floor(random() * 15));
    const values = await collect(readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(8) }));
    expect(values).toEqual(range(1000));
    expect(source.maxInFlight).toBeGreaterThan(1);
    expect(new Set(source.requested).size).toBe(source.requested.length);
  });

  it('keeps pages in flight plus pages waiting for the consumer within the concurrency', async () => {
    const source = new FakeSource(400, 10, () => 1);
    const buffered: number[] = [];
    let consumed = 0;
    const pages = readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(4) });
    for await (const page of pages) {
      consumed = page.pageNumber + 1;
      // A slow sink: everything requested but not yet consumed is held somewhere.
      await sleep(5);
      buffered.push(source.requested.length - consumed);
    }
    expect(consumed).toBe(40);
    expect(Math.max(...buffered)).toBeLessThanOrEqual(4);
  });

  it('tells each page fetched ahead that it is needed only when the consumer has finished the one before', async () => {
    const source = new FakeSource(100, 10);
    for await (const page of readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(4) })) {
      source.consumerAt = page.pageNumber;
      await sleep(2);
    }
    expect(source.requested.length).toBe(10);
    for (let page = 1; page < 10; page++) expect(source.neededAt.get(page)).toBe(page - 1);
  });

  it('lets the pages fetched ahead go when the consumer stops early, so none waits for ever', async () => {
    const source = new FakeSource(100, 10);
    for await (const page of readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(4) })) {
      if (page.pageNumber === 2) break;
    }
    await sleep(5);
    expect([...source.neededAt.keys()]).toEqual([0, 1, 2]);
    expect(source.dropped.sort()).toEqual([3, 4, 5]);
  });

  it('falls back to one page at a time when the server pages smaller than asked', async () => {
    const source = new FakeSource(25, 5); // asked for 10 per page, server gives 5
    const values = await collect(readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(4) }));
    expect(values).toEqual(range(25));
    expect(source.maxInFlight).toBe(1);
  });

  it('reads an empty table as one page', async () => {
    const source = new FakeSource(0, 10);
    expect(await collect(readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(4) }))).toEqual([]);
    expect(source.requested).toEqual([0]);
  });

  it('fails with the check and page when a page contradicts page 0', async () => {
    const source = new FakeSource(30, 10);
    const original = source.fetchPage.bind(source);
    source.fetchPage = async (n) => {
      const page = await original(n);
      return n === 2 ? { ...page, headers: ['m'] } : page;
    };
    const error = await collect(readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(3) })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExportPageMismatchError);
    expect(error).toMatchObject({ code: 'export_page_mismatch' });
    expect(error).toMatchObject({ pageNumber: 2, check: 'headers-stable', drift: true });
  });

  it('surfaces a failed page request in page order', async () => {
    const source = new FakeSource(50, 10);
    const original = source.fetchPage.bind(source);
    source.fetchPage = async (n) => {
      if (n === 3) throw new Error('page 3 failed');
      return original(n);
    };
    const seen: number[] = [];
    const error = await (async () => {
      for await (const page of readPages(source, { jobName: 'j', itemsPerPage: 10, concurrency: new AdaptiveConcurrency(4) })) seen.push(page.pageNumber);
    })().catch((e: unknown) => e);
    expect((error as Error).message).toBe('page 3 failed');
    expect(seen).toEqual([0, 1, 2]);
  });
});
