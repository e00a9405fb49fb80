import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../src/cli/run-command.js';
import { environmentSchema } from '../../src/config/environment-schema.js';
import { jobSchema } from '../../src/config/job-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { createLogger } from '../../src/log.js';
import { runJobs } from '../../src/pipeline/run-jobs.js';
import type { RunSummary } from '../../src/pipeline/job-summary.js';
import { CsvSink } from '../../src/sinks/csv/index.js';
import { readCsv } from '../support/csv-read.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';
import {
  HOSTILE_QUERY,
  hostileServersEachTest,
  startHostileServer,
  tablePage,
  VALID_TOKEN,
  type HostileScript,
  type HostileServer,
  type RecordedRequest,
  type Table,
} from '../support/hostile-server.js';

/**
 * The whole run (token → pages → typed rows → CSV sink) against a source that misbehaves in
 * exactly one way: either the exact table lands in the CSV, or the tile fails with a code and
 * nothing is written.
 */

const TABLE: Table = {
  headers: ['Type', 'Incidents'],
  dataTypes: ['text', 'number'],
  rows: [
    ['Outage', 3],
    ['Security', 1],
    ['Störung – 東京', 7],
    ['Maintenance', 2],
    ['Other, "misc"', 0],
  ],
};
const EXPECTED_CSV_ROWS = TABLE.rows.map((row) => row.map(String));

const hostile = hostileServersEachTest();
const dispatcher = hostile.dispatcher;
const root = tempDirEachTest();

const job: LoadedJob = {
  ...jobSchema.parse({ name: 'hostile', tile: 't-1', query: HOSTILE_QUERY, sinks: [{ type: 'csv' }] }),
  file: 'jobs/hostile.yaml',
  timezone: 'UTC',
};

async function run(script: HostileScript, runJob: LoadedJob = job): Promise<{ summary: RunSummary; exitCode: number; outDir: string; source: HostileServer }> {
  const server = await hostile.start(script);
  const outDir = path.join(root.path, 'out');
  await mkdir(outDir, { recursive: true });
  const environment = environmentSchema.parse({
    source: { baseUrl: server.url, authUrl: server.url, clientId: 'hostile-id', clientSecret: '${HOSTILE_SECRET}', itemsPerPage: 2, requestTimeoutMs: 2000 },
    sinks: { csv: { directory: outDir } },
  });
  const logger = await createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
  const summary = await runJobs([runJob], {
    environment,
    credentials: { clientId: 'hostile-id', clientSecret: 'hostile-secret' },
    logger,
    dispatcher,
    buildSinks: () => [new CsvSink({ config: { type: 'csv', gzip: false }, directory: outDir, timezone: 'UTC' })],
    retry: { maxAttempts: 3, baseDelayMs: 2, maxDelayMs: 50, budget: 20 },
  });
  return { summary, exitCode: exitCodeOf(summary), outDir, source: server };
}

const sorted = (numbers: number[]) => [...numbers].sort((a, b) => a - b);

describe('a run against a source that repeats a page', () => {
  // A cache keyed on the URL: the page number travels in the POST body, so page 2 gets page 1.
  const repeatingCache: HostileScript = { page: (request) => ({ json: tablePage(TABLE, request, { pageNumber: Math.min(request.pageNumber!, 1) }) }) };

  it('re-reads once, then fails with export_inconsistent naming the check; exit 1; no CSV', async () => {
    const { summary, exitCode, outDir, source } = await run(repeatingCache);
    expect(exitCode).toBe(1);
    expect(summary).toMatchObject({ succeeded: 0, failed: 1 });
    const [tile] = summary.tiles;
    expect(tile).toMatchObject({ status: 'failed', restarts: 1, rows: 0, error: { code: 'export_inconsistent' } });
    expect(tile!.error!.message).toMatch(
      /^job hostile: export inconsistent twice; first read: page 2: check "page-repeated" failed: its 2 rows are identical to page 1.s.*re-read from page 0: page 2: check "page-repeated"/,
    );
    expect(sorted(source.pagesAsked())).toEqual([0, 0, 1, 1, 2, 2]);
    expect(await readdir(outDir)).toEqual([]);
  });

  it('leaves the previous CSV exactly as it was', async () => {
    const previous = 'Type,Incidents\r\nOld,1\r\n';
    await mkdir(path.join(root.path, 'out'), { recursive: true });
    await writeFile(path.join(root.path, 'out', 'hostile.csv'), previous);
    const { summary, outDir } = await run(repeatingCache);
    expect(summary.tiles[0]!.error!.code).toBe('export_inconsistent');
    expect(await readdir(outDir)).toEqual(['hostile.csv']);
    expect(await readFile(path.join(outDir, 'hostile.csv'), 'utf8')).toBe(previous);
  });

  it('writes the exact table when the repeat was a one-off and the re-read is clean', async () => {
    const { summary, exitCode, outDir } = await run({
      page: (request, index) => ({ json: tablePage(TABLE, request, index < 3 ? { pageNumber: Math.min(request.pageNumber!, 1) } : {}) }),
    });
    expect(exitCode).toBe(0);
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', restarts: 1, rows: 5, pages: 3 });
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
  });
});

describe('a run against a source that compresses its answers', () => {
  it.each(['gzip', 'br'] as const)('writes the exact table from %s pages and a token compressed the same way', async (encoding) => {
    const { summary, exitCode, outDir, source } = await run({
      token: () => ({ json: { access_token: 'zipped', token_type: 'Bearer', expires_in: '3600' }, encoding }),
      page: (request) => ({ json: tablePage(TABLE, request), encoding, trickle: { bytes: 16, everyMs: 1 } }),
    });
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, pages: 3, retries: 0 });
    expect(exitCode).toBe(0);
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
    expect(source.requests.every((request) => request.headers['accept-encoding'] === 'gzip, br')).toBe(true);
    expect(source.requests.filter((request) => request.endpoint === 'export').every((request) => request.headers.authorization === 'Bearer zipped')).toBe(true);
  });

  it('refuses gzip sent without content-encoding: exit 1, no CSV', async () => {
    const { summary, exitCode, outDir } = await run({ page: (request) => ({ json: tablePage(TABLE, request), encoding: 'gzip', undeclared: true }) });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]!.error).toMatchObject({
      code: 'export_response_invalid',
      message: expect.stringContaining('gzip data but content-encoding does not say so'),
    });
    expect(await readdir(outDir)).toEqual([]);
  });
});

describe('a run against a source that refuses politely', () => {
  it('quotes the service message of an HTTP 200 with ok: false: exit 1, no CSV', async () => {
    const { summary, exitCode, outDir } = await run({ page: () => ({ json: { ok: false, error: { status: 403, message: 'tile t-1 is private' } } }) });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]!.error).toEqual({
      code: 'export_api_error',
      message: 'job hostile: page 0: export failed with HTTP 200: tile t-1 is private',
      retryable: false,
    });
    expect(await readdir(outDir)).toEqual([]);
  });

  it('fails at once on a Retry-After beyond what the job waits: exit 1, no CSV, one request', async () => {
    const { summary, exitCode, outDir, source } = await run({
      page: (request) =>
        request.pageNumber === 1
          ? { status: 429, headers: { 'retry-after': '3600' }, json: { error: { status: 429, message: 'rate limit exceeded' } } }
          : { json: tablePage(TABLE, request) },
    });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]!.error).toMatchObject({ code: 'source_retry_after_too_long' });
    expect(summary.tiles[0]!.error!.message).toContain('page 1: HTTP 429 with Retry-After: 3600 (more than the 1 s this job waits): rate limit exceeded');
    expect(source.pagesAsked().filter((page) => page === 1)).toEqual([1]);
    expect(await readdir(outDir)).toEqual([]);
  });
});

describe('a run against a source that sends numbers beyond double precision', () => {
  // Raw body text: JSON.stringify could not even write these literals.
  const page = (literals: string[]) =>
    `{"ok":true,"result":{"navigation":{"hasPrev":false,"hasNext":false,"rowsCount":${literals.length},"totalRows":${literals.length}},` +
    `"headers":["Type","Incidents"],"dataTypes":["text","number"],"rows":[${literals.map((literal, index) => `["r${index}",${literal}]`).join(',')}]}}`;
  const typed = (type: 'NUMERIC' | 'INT64'): LoadedJob => ({ ...job, columns: { Incidents: { type } } });

  it('writes NUMERIC values with every digit the service sent', async () => {
    const literals = ['12345678901234567.5', '-98765432109876543210.123456789', '99999999999999999999999999999.999999999', '1.5', '0.000000001'];
    const { summary, outDir } = await run({ page: () => ({ body: page(literals) }) }, typed('NUMERIC'));
    expect(summary.tiles[0]!.status).toBe('succeeded');
    const csv = await readCsv(path.join(outDir, 'hostile.csv'));
    expect(csv.rows.map((row) => row[1])).toEqual(literals);
  });

  it('keeps INT64 beyond 2^53 exact, and refuses one beyond int64 naming page, row, column and value', async () => {
    const exact = await run({ page: () => ({ body: page(['9007199254740993', '-9223372036854775808']) }) }, typed('INT64'));
    const target = path.join(exact.outDir, 'hostile.csv');
    expect((await readCsv(target)).rows.map((row) => row[1])).toEqual(['9007199254740993', '-9223372036854775808']);
    const published = await readFile(target, 'utf8');
    await hostile.closeCurrent();

    const refused = await run({ page: () => ({ body: page(['1', '9223372036854775808']) }) }, typed('INT64'));
    expect(refused.exitCode).toBe(1);
    expect(refused.summary.tiles[0]!.error?.message).toMatch(/page 0, row 1, column "Incidents".*9223372036854775808/);
    expect(await readdir(refused.outDir)).toEqual(['hostile.csv']);
    expect(await readFile(target, 'utf8')).toBe(published);
  });

  it('keeps a long literal in a text column as sent, and reads FLOAT64 as the nearest double, on the same page', async () => {
    // The text column holds a number: the page is read exactly. Incidents stays FLOAT64.
    const body =
      '{"ok":true,"result":{"navigation":{"hasPrev":false,"hasNext":false,"rowsCount":2,"totalRows":2},' +
      '"headers":["Type","Incidents"],"dataTypes":["text","number"],' +
      '"rows":[[12345678901234567890123,0.1000000000000000055511151231257827],["Outage",12345678901234567]]}}';
    const { summary, outDir } = await run({ page: () => ({ body }) });
    expect(summary.tiles[0]!.status).toBe('succeeded');
    expect((await readCsv(path.join(outDir, 'hostile.csv'))).rows).toEqual([
      ['12345678901234567890123', '0.1'],
      ['Outage', '12345678901234568'],
    ]);
  });

  it('reads a page whose only long literals are FLOAT64 values as JSON.parse does, to the same bytes', async () => {
    // No text, INT64 or NUMERIC column holds a number: the scan for inexact literals is skipped.
    const literals = ['0.30000000000000004', '12345678901234567890', '1.00000000000000000001', '5e-324'];
    const { summary, outDir } = await run({ page: () => ({ body: page(literals) }) });
    expect(summary.tiles[0]!.status).toBe('succeeded');
    const csv = await readCsv(path.join(outDir, 'hostile.csv'));
    expect(csv.rows.map((row) => row[1])).toEqual(literals.map((literal) => String(Number(literal))));
  });
});

/**
 * Tenants the spec allows but the sandbox does not show (docs/api-assumptions.md, "What tilehouse assumes about
 * the API"): each must export exactly what it served, or be refused naming what failed.
 */
describe('a run against a legal source that pages in its own way', () => {
  /** The answer's `query` as this tenant echoes it (undefined: none). */
  const echoing = (echo: (request: RecordedRequest) => unknown): HostileScript => ({
    page: (request) => {
      const page = tablePage(TABLE, request);
      const query = echo(request);
      if (query !== undefined) page.result.query = query;
      return { json: page };
    },
  });
  const savedQuery = (pageNumber: number) => ({ ...HOSTILE_QUERY, options: { pageNumber, itemsPerPage: 50 } });

  it.each([
    { name: "echoes the tile's saved query, pageNumber 0 on every page", script: echoing(() => savedQuery(0)) },
    { name: "echoes the tile's saved query, pageNumber 1 on every page", script: echoing(() => savedQuery(1)) },
    { name: 'echoes no query at all', script: echoing(() => undefined) },
    { name: 'echoes the query on page 0 only', script: echoing((request) => (request.pageNumber === 0 ? request.json : undefined)) },
    {
      name: 'says hasPrev false on every page',
      script: { page: (request: RecordedRequest) => ({ json: withNavigation(tablePage(TABLE, request), { hasPrev: false }) }) },
    },
  ])('$name: writes the exact table, the summary says its pages stood on their rows', async ({ script }) => {
    const { summary, exitCode, outDir } = await run(script);
    expect(summary.tiles[0]!.error).toBeUndefined();
    expect(exitCode).toBe(0);
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, pages: 3, restarts: 0, pageIdentity: 'rows-digest' });
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
  });

  it('echoes the query it ran: the summary says the echo proved the pages', async () => {
    const { summary, outDir } = await run(echoing((request) => request.json));
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, pageIdentity: 'echo' });
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
  });

  it('fits the table on one page: single-page', async () => {
    const { summary } = await run({ page: (request) => ({ json: tablePage(TABLE, { ...request, itemsPerPage: 50 }) }) });
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, pages: 1, pageIdentity: 'single-page' });
  });

  it('serves fewer rows per page than asked, counting pages by its own size: the exact table, one page at a time', async () => {
    const { summary, exitCode, outDir, source } = await run({ page: (request) => ({ json: tablePage(TABLE, { ...request, itemsPerPage: 1 }) }) });
    expect(exitCode).toBe(0);
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, pages: 5 });
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
    expect(source.pagesAsked()).toEqual([0, 1, 2, 3, 4]);
  });

  it('serves more rows per page than asked: the exact table, the pages fetched ahead of its end dropped', async () => {
    const { summary, exitCode, outDir } = await run({ page: (request) => ({ json: tablePage(TABLE, { ...request, itemsPerPage: 3 }) }) });
    expect(exitCode).toBe(0);
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, pages: 2 });
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
  });

  it('serves fewer rows per page than asked but counts pages by the size asked: refused, naming source.itemsPerPage; no CSV', async () => {
    // Page p holds row 2p only: rows 1 and 3 are never served, though every count on a page is right.
    const { summary, exitCode, outDir } = await run({
      page: (request) => {
        const page = tablePage(TABLE, request);
        page.result.rows = (page.result.rows as unknown[][]).slice(0, 1);
        return { json: withNavigation(page, { rowsCount: 1 }) };
      },
    });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]!.error!.code).toBe('export_inconsistent');
    expect(summary.tiles[0]!.error!.message).toContain(
      'read 3 rows in total but totalRows is 5; page 0 held 1 row although 2 were asked for (source.itemsPerPage) and more followed: if the source caps its page size, set source.itemsPerPage to 1',
    );
    expect(await readdir(outDir)).toEqual([]);
  });
});

describe('a run against a source whose pages are not the ones asked for', () => {
  it('a cache keyed on the URL repeating page 0 under a static echo: refused by its rows; exit 1; no CSV', async () => {
    const { summary, exitCode, outDir } = await run({
      page: (request) => {
        const page = tablePage(TABLE, request, { pageNumber: 0 });
        page.result.query = { ...HOSTILE_QUERY, options: { pageNumber: 0, itemsPerPage: 2 } };
        return { json: page };
      },
    });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', restarts: 1, error: { code: 'export_inconsistent' } });
    expect(summary.tiles[0]!.error!.message).toMatch(/page 1: check "page-repeated" failed: its 2 rows are identical to page 0's/);
    expect(summary.tiles[0]).not.toHaveProperty('pageIdentity');
    expect(await readdir(outDir)).toEqual([]);
  });

  it('an echo that followed the request, then names another page: refused as page-echo; exit 1; no CSV', async () => {
    const { summary, exitCode, outDir } = await run({
      page: (request) => {
        const page = tablePage(TABLE, request, { echo: true });
        if (request.pageNumber === 2) page.result.query = { ...HOSTILE_QUERY, options: { pageNumber: 1, itemsPerPage: 2 } };
        return { json: page };
      },
    });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]!.error!.code).toBe('export_inconsistent');
    expect(summary.tiles[0]!.error!.message).toMatch(/page 2: check "page-echo" failed: asked for page 2 but the answer's query says pageNumber 1/);
    expect(await readdir(outDir)).toEqual([]);
  });
});

describe('a run against a source whose compressed answer is corrupt', () => {
  it('retries a corrupt gzip answer and writes the exact table', async () => {
    const { summary, exitCode, outDir } = await run({
      page: (request, index) => ({ json: tablePage(TABLE, request), encoding: 'gzip', corrupt: index === 1 }),
    });
    expect(exitCode).toBe(0);
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 5, retries: 1 });
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: EXPECTED_CSV_ROWS });
  });

  it('fails with export_body_corrupt when every attempt is corrupt: exit 1, no CSV, the previous file kept', async () => {
    await mkdir(path.join(root.path, 'out'), { recursive: true });
    await writeFile(path.join(root.path, 'out', 'hostile.csv'), 'Type,Incidents\r\nOld,1\r\n');
    const { summary, exitCode, outDir, source } = await run({
      page: (request) => ({ json: tablePage(TABLE, request), encoding: 'gzip', corrupt: request.pageNumber === 1 }),
    });
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]!.error).toMatchObject({
      code: 'export_body_corrupt',
      message: expect.stringMatching(/page 1: .*content-encoding gzip could not be decoded \(corrupt stream: .*\(attempt 3;/),
    });
    expect(source.pagesAsked().filter((page) => page === 1)).toEqual([1, 1, 1]);
    expect(await readdir(outDir)).toEqual(['hostile.csv']);
    expect(await readFile(path.join(outDir, 'hostile.csv'), 'utf8')).toBe('Type,Incidents\r\nOld,1\r\n');
  });
});

describe('a run against a source that redirects', () => {
  let elsewhere: HostileServer | undefined;
  afterEach(async () => {
    await elsewhere?.close();
    elsewhere = undefined;
  });

  it.each([
    { endpoint: 'export' as const, status: 307, what: 'page 0' },
    { endpoint: 'token' as const, status: 302, what: 'token request' },
  ])(
    '$endpoint answers $status: fails once with source_redirect naming Location; the other host never sees token or secret',
    async ({ endpoint, status, what }) => {
      elsewhere = await startHostileServer({ token: () => VALID_TOKEN, page: (request) => ({ json: tablePage(TABLE, request) }) });
      const location = `${elsewhere.url}/moved${endpoint === 'token' ? '/oauth/token' : '/api/v1/topics/incident/execute?tileId=t-1'}`;
      const redirect = { status, headers: { location }, body: 'moved' };
      const { summary, exitCode, outDir, source } = await run({
        ...(endpoint === 'token' ? { token: () => redirect } : {}),
        page: (request) => (endpoint === 'export' ? redirect : { json: tablePage(TABLE, request) }),
      });
      expect(exitCode).toBe(1);
      expect(summary.tiles[0]!.error!.code).toBe('source_redirect');
      expect(summary.tiles[0]!.error!.message).toContain(
        `${what}: HTTP ${status} redirect to ${location}; tilehouse does not follow redirects, because the request carries a bearer token`,
      );
      expect(elsewhere.requests).toEqual([]);
      expect(source.requests.filter((request) => request.endpoint === endpoint)).toHaveLength(1);
      expect(await readdir(outDir)).toEqual([]);
    },
  );
});

function withNavigation<T extends { result: Record<string, unknown> }>(page: T, navigation: Record<string, unknown>): T {
  page.result.navigation = { ...(page.result.navigation as Record<string, unknown>), ...navigation };
  return page;
}

describe('a run against a source that orders rows differently on different requests', () => {
  /** A job whose query orders by one item; `order` merges into that item (Incidents unless `header` says otherwise). */
  const orderedJob = (order: Record<string, unknown>, header = 'Incidents'): LoadedJob => ({
    ...job,
    query: { ...job.query, items: job.query.items.map((item) => (item.header === header ? { ...item, ...order } : item)) },
  });
  const ascending = orderedJob({ order: 'asc' });
  const table = (counts: Array<number | null>, types: string[] = ['T1', 'T2', 'T3', 'T4', 'T5', 'T6']): Table => ({
    ...TABLE,
    rows: counts.map((count, index) => [types[index]!, count]),
  });
  const csvRows = (rows: unknown[][]) => rows.map((row) => row.map((cell) => (cell === null ? null : String(cell))));
  const SORTED = table([1, 2, 3, 4, 5, 6]);
  /** Each request's own order: page 2's request sorts the table rotated by 3, so it serves rows 2 and 3 again and never 5 and 6. */
  const reordering: HostileScript = {
    page: (request) => {
      const rows = request.pageNumber === 2 ? [...SORTED.rows.slice(3), ...SORTED.rows.slice(0, 3)] : SORTED.rows;
      return { json: tablePage({ ...SORTED, rows }, request) };
    },
  };

  it('writes rows twice and loses others with exit 0 when the query states no order (the case no check can see)', async () => {
    const { exitCode, outDir } = await run(reordering);
    expect(exitCode).toBe(0);
    expect((await readCsv(path.join(outDir, 'hostile.csv'))).rows.map((row) => row[1])).toEqual(['1', '2', '3', '4', '2', '3']);
  });

  it('refuses it when the query orders by a number: re-read once, export_inconsistent naming page, row, column, values; no CSV', async () => {
    const { summary, exitCode, outDir, source } = await run(reordering, ascending);
    expect(exitCode).toBe(1);
    expect(summary.tiles[0]).toMatchObject({ status: 'failed', restarts: 1, rows: 0, error: { code: 'export_inconsistent' } });
    expect(summary.tiles[0]!.error!.message).toMatch(
      /^job hostile: export inconsistent twice; first read: page 2: check "row-order" failed: row 1 has "Incidents" 2, which sorts before page 1's last row's 4 although the query orders by that column asc: the source returned rows in a different order on different requests.*re-read from page 0: page 2: check "row-order"/,
    );
    expect(sorted(source.pagesAsked())).toEqual([0, 0, 1, 1, 2, 2]);
    expect(await readdir(outDir)).toEqual([]);
  });

  it.each([
    ['the same ascending order on every request', ascending, SORTED],
    ['a descending order', orderedJob({ order: 'desc' }), table([6, 5, 4, 3, 2, 1])],
    ['ties across page boundaries', ascending, table([1, 2, 2, 2, 2, 3])],
    ['nulls last at a boundary', ascending, table([1, 2, 3, 4, null, null])],
    ['nulls first at a boundary', ascending, table([null, null, 1, 2, 3, 4])],
    ['a null amid the rows (where nulls sort is unstated)', ascending, table([5, 6, null, 1, 2, 3])],
    // The server's collation puts 'B' before 'a' (binary), another's would not: text order is never judged.
    ['a text order in a collation of its own', orderedJob({ order: 'asc' }, 'Type'), table([1, 2, 3, 4, 5, 6], ['A', 'B', 'C', 'a', 'b', 'c'])],
    ['an aggregated count ordered desc, grouped by type', orderedJob({ order: 'desc', aggregate: 'count' }), table([9, 7, 7, 3, 2, 1])],
  ])('writes the exact table for %s', async (_case, orderJob, served) => {
    const grouped = orderJob.query.items.some((item) => item.aggregate !== undefined)
      ? { ...orderJob, query: { ...orderJob.query, items: orderJob.query.items.map((item) => (item.header === 'Type' ? { ...item, grouped: true } : item)) } }
      : orderJob;
    const { summary, exitCode, outDir } = await run({ page: (request) => ({ json: tablePage(served, request) }) }, grouped);
    expect(summary.tiles[0]).toMatchObject({ status: 'succeeded', rows: 6, pages: 3, restarts: 0 });
    expect(exitCode).toBe(0);
    expect(await readCsv(path.join(outDir, 'hostile.csv'))).toEqual({ header: TABLE.headers, rows: csvRows(served.rows) });
  });
});
