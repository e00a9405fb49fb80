import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExportQuery } from '../../../src/config/job-schema.js';
import { RetryBudget } from '../../../src/retry.js';
import { ExportPageMismatchError, pagesOfQuery, type ExportConnection, type ExportPage, type PageIdentity } from '../../../src/source/export-endpoint/index.js';
import { SessionToken } from '../../../src/source/session-token.js';
import { sortKeyOf } from '../../../src/transform/values/sort-key.js';

/**
 * The seam's first question, "the pages of a query", against a loopback endpoint that serves a
 * table of `rows` ids by the page number and size in each request body, and misbehaves only as
 * a test asks.
 */
interface Endpoint {
  url: string;
  /** Every request body as JSON, in arrival order. */
  bodies: Array<{ items: unknown[]; options: { pageNumber: number; itemsPerPage: number } & Record<string, unknown> }>;
  /** The URLs and authorization headers seen. */
  seen: Array<{ url: string; authorization: string | undefined }>;
  /** The most export requests in flight at once. */
  peakInFlight: number;
  close(): Promise<void>;
}

interface Misbehaviour {
  /** Serve this page two rows early (the source sorted this request differently, so rows slid across the boundary). */
  slidePage?: number;
  /** Hold each answer this long, so requests overlap. */
  delayMs?: number;
}

async function startEndpoint(rows: number, misbehaviour: Misbehaviour = {}): Promise<Endpoint> {
  let inFlight = 0;
  const endpoint: Endpoint = { url: '', bodies: [], seen: [], peakInFlight: 0, close: async () => undefined };
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      inFlight += 1;
      endpoint.peakInFlight = Math.max(endpoint.peakInFlight, inFlight);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Endpoint['bodies'][number];
      endpoint.bodies.push(body);
      endpoint.seen.push({ url: request.url ?? '', authorization: request.headers.authorization });
      const { pageNumber, itemsPerPage } = body.options;
      const from = pageNumber * itemsPerPage - (misbehaviour.slidePage === pageNumber ? 2 : 0);
      const ids = Array.from({ length: rows }, (_, index) => index + 1).slice(from, from + itemsPerPage);
      const result = {
        navigation: { hasPrev: pageNumber > 0, hasNext: (pageNumber + 1) * itemsPerPage < rows, rowsCount: ids.length, totalRows: rows },
        headers: ['Id'],
        dataTypes: ['number'],
        rows: ids.map((id) => [id]),
        query: body,
      };
      setTimeout(() => {
        inFlight -= 1;
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, result }));
      }, misbehaviour.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  endpoint.url = `http://127.0.0.1:${port}/tenant`;
  endpoint.close = () => new Promise((resolve) => server.close(() => resolve()));
  return endpoint;
}

const ORDERED: ExportQuery = {
  items: [{ header: 'Id', formula: '[incident.number]', dataType: 'number', order: 'asc', filters: [] }],
  options: { limit: 1000 },
} as ExportQuery;
const UNORDERED: ExportQuery = { items: [{ header: 'Id', formula: '[incident.number]', dataType: 'number', filters: [] }], options: {} } as ExportQuery;

let dispatcher: Agent;
let endpoint: Endpoint | undefined;

beforeEach(() => {
  dispatcher = new Agent({ connections: 8 });
});
afterEach(async () => {
  await endpoint?.close();
  endpoint = undefined;
  await dispatcher.close();
});

function connectionTo(server: Endpoint, overrides: Partial<ExportConnection> = {}): ExportConnection {
  return {
    baseUrl: server.url,
    tileParam: 'tileId',
    tileId: 't-7',
    itemsPerPage: 3,
    jobName: 'seam',
    dispatcher,
    timeouts: { headersMs: 2000, bodyMs: 2000, totalMs: 5000 },
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 10, budget: new RetryBudget(5) },
    token: new SessionToken(async () => ({ accessToken: 'seam-token', expiresIn: 60 })),
    sortKey: sortKeyOf,
    ...overrides,
  };
}

async function all(pages: AsyncIterable<ExportPage>): Promise<ExportPage[]> {
  const read: ExportPage[] = [];
  for await (const page of pages) read.push(page);
  return read;
}

describe('pagesOfQuery: the pages of a query', () => {
  it('yields every page in order and asks each with the query, its page number and the page size', async () => {
    endpoint = await startEndpoint(8);
    let identity: PageIdentity | undefined;
    const pages = await all(pagesOfQuery(ORDERED, connectionTo(endpoint)).pages({ onPageIdentity: (found) => (identity = found) }));
    expect(pages.map((page) => page.rows.flat())).toEqual([
      [1, 2, 3],
      [4, 5, 6],
      [7, 8],
    ]);
    expect(pages.map((page) => page.pageNumber)).toEqual([0, 1, 2]);
    expect(endpoint.bodies.map((body) => body.options)).toEqual([0, 1, 2].map((pageNumber) => ({ limit: 1000, pageNumber, itemsPerPage: 3 })));
    expect(endpoint.bodies[0]!.items).toEqual(ORDERED.items);
    expect(
      endpoint.seen.every((request) => request.url === '/tenant/api/v1/topics/incident/execute?tileId=t-7' && request.authorization === 'Bearer seam-token'),
    ).toBe(true);
    // The answers echo the request, so each page proved it is the page asked for.
    expect(identity).toBe('echo');
  });

  it('reads one page at a time unless asked for more, and keeps at most `concurrency` in flight', async () => {
    endpoint = await startEndpoint(15, { delayMs: 40 });
    await all(pagesOfQuery(UNORDERED, connectionTo(endpoint)).pages());
    expect(endpoint.peakInFlight).toBe(1);
    await endpoint.close();
    endpoint = await startEndpoint(15, { delayMs: 40 });
    const pages = await all(pagesOfQuery(UNORDERED, connectionTo(endpoint)).pages({ concurrency: 3 }));
    expect(pages.map((page) => page.pageNumber)).toEqual([0, 1, 2, 3, 4]);
    expect(endpoint.peakInFlight).toBe(3);
  });

  it("refuses a page whose first row sorts before the previous page's last, against the query's order", async () => {
    endpoint = await startEndpoint(8, { slidePage: 1 });
    const error = await all(pagesOfQuery(ORDERED, connectionTo(endpoint)).pages()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ExportPageMismatchError);
    expect(error).toMatchObject({ code: 'export_page_mismatch' });
    expect((error as ExportPageMismatchError).check).toBe('row-order');
    expect((error as ExportPageMismatchError).pageNumber).toBe(1);
    expect((error as Error).message).toMatch(/^job seam: page 1: check "row-order" failed: row 1 has "Id" 2, which sorts before page 0's last row's 3/);
  });

  it('accepts the same pages for a query that states no order (nothing to hold them against)', async () => {
    endpoint = await startEndpoint(8, { slidePage: 1 });
    const pages = await all(pagesOfQuery(UNORDERED, connectionTo(endpoint)).pages());
    expect(pages.map((page) => page.rows.flat())).toEqual([
      [1, 2, 3],
      [2, 3, 4],
      [7, 8],
    ]);
  });

  it('checks the order with the sort key the connection lends it, not one of its own', async () => {
    endpoint = await startEndpoint(8, { slidePage: 1 });
    const unreadable = pagesOfQuery(ORDERED, connectionTo(endpoint, { sortKey: () => undefined }));
    expect((await all(unreadable.pages())).map((page) => page.pageNumber)).toEqual([0, 1, 2]);
  });

  it('fetchPage answers one page alone, checked against no other', async () => {
    endpoint = await startEndpoint(8, { slidePage: 2 });
    const query = pagesOfQuery(ORDERED, connectionTo(endpoint));
    const page = await query.fetchPage(2);
    expect(page.pageNumber).toBe(2);
    expect(page.rows.flat()).toEqual([5, 6, 7]);
    expect(endpoint.bodies.map((body) => body.options.pageNumber)).toEqual([2]);
  });

  it('pageChecks gives the checks of pages() afresh each time, for pages read one by one', async () => {
    endpoint = await startEndpoint(8, { slidePage: 1 });
    const query = pagesOfQuery(ORDERED, connectionTo(endpoint));
    const first = query.pageChecks();
    expect(first.check(await query.fetchPage(0))).toBeUndefined();
    expect(first.check(await query.fetchPage(1))).toMatchObject({ check: 'row-order', pageNumber: 1 });
    // A fresh set has seen no page 0: page 1 alone has no boundary to break.
    const second = query.pageChecks();
    expect(second).not.toBe(first);
    expect(second.check(await query.fetchPage(0))).toBeUndefined();
  });

  it('asks nothing of the endpoint until a page is wanted', async () => {
    endpoint = await startEndpoint(8);
    const query = pagesOfQuery(ORDERED, connectionTo(endpoint));
    query.pages();
    query.pageChecks();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(endpoint.bodies).toHaveLength(0);
  });
});
