import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AdaptiveConcurrency } from '../../../src/source/adaptive-concurrency.js';
import type { ExportPage } from '../../../src/source/export-endpoint/export-response.js';
import { readPages } from '../../../src/source/export-endpoint/read-pages.js';
import { SessionToken } from '../../../src/source/session-token.js';
import { NO_TELEMETRY, telemetry, useTelemetry } from '../../../src/telemetry/telemetry.js';
import { fastPolicy, hostileClient, HOSTILE_QUERY, hostileServersEachTest, tablePage, type Table } from '../../support/hostile-server.js';
import { waitUntil } from '../../support/wait-until.js';

const hostile = hostileServersEachTest();
const dispatcher = hostile.dispatcher;

const start = hostile.start;

const TABLE: Table = {
  headers: ['Type', 'Incidents'],
  dataTypes: ['text', 'number'],
  rows: [
    ['Outage', 3],
    ['Security', 1],
    ['Degradation', 7],
    ['Maintenance', 2],
    ['Other', 0],
  ],
};

async function readAll(pages: AsyncIterable<ExportPage>): Promise<unknown[][]> {
  const rows: unknown[][] = [];
  for await (const page of pages) rows.push(...page.rows);
  return rows;
}

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error as Error & Record<string, unknown>,
  );

/** No control characters, no U+FFFD: what a message may carry of a binary body. */
const PRINTABLE = /^[^\p{Cc}\uFFFD]*$/u;

describe('ExportClient and readPages: page identity', () => {
  it('asks for each page by number in the POST body, with the tile in the URL and the token in the header', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request) }) });
    const rows = await readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2 }));
    expect(rows).toEqual(TABLE.rows);
    const asked = source.requests.filter((r) => r.endpoint === 'export');
    expect(asked.map((r) => r.json)).toEqual([0, 1, 2].map((pageNumber) => ({ ...HOSTILE_QUERY, options: { pageNumber, itemsPerPage: 2 } })));
    for (const request of asked) {
      expect(request.url).toBe('/api/v1/topics/incident/execute?tileId=t-1');
      expect(request.headers.authorization).toBe('Bearer hostile-token');
      expect(request.headers['accept-encoding']).toBe('gzip, br');
    }
  });

  it('refuses a page served again for a later page number (a cache keyed on the URL), as drift', async () => {
    // Page 2 is answered with page 1's rows and navigation: hasPrev is right, counts are plausible.
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request, { pageNumber: Math.min(request.pageNumber!, 1) }) }) });
    const error = await failureOf(readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2 })));
    expect(error).toMatchObject({ code: 'export_page_identity', check: 'page-repeated', pageNumber: 2, drift: true });
    expect(error.message).toContain('job hostile: page 2: check "page-repeated" failed: its 2 rows are identical to page 1\'s');
  });

  it('refuses page 0 served for page 1 by its rows, whatever hasPrev says', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request, { pageNumber: 0 }) }) });
    const error = await failureOf(readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2 })));
    expect(error).toMatchObject({ code: 'export_page_identity', check: 'page-repeated', pageNumber: 1, drift: true });
    expect(error.message).toContain("its 2 rows are identical to page 0's");
  });

  it('refuses page 0 served for page 2 once hasPrev has followed the request', async () => {
    const source = await start({
      page: (request) => ({ json: tablePage(TABLE, request, { pageNumber: request.pageNumber === 2 ? 0 : request.pageNumber! }) }),
    });
    const error = await failureOf(readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2 })));
    expect(error).toMatchObject({ code: 'export_page_identity', check: 'hasPrev', pageNumber: 2, drift: true });
    expect(error.message).toContain('navigation.hasPrev is false on page 2');
  });

  it('refuses a page whose echoed query, having followed the request, names another page', async () => {
    const source = await start({
      page: (request) => {
        const page = tablePage(TABLE, request, { echo: true });
        if (request.pageNumber === 2) page.result.query = { ...HOSTILE_QUERY, options: { pageNumber: 0, itemsPerPage: 2 } };
        return { json: page };
      },
    });
    const error = await failureOf(readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2 })));
    expect(error).toMatchObject({ code: 'export_page_identity', check: 'page-echo', pageNumber: 2 });
    expect(error.message).toContain("asked for page 2 but the answer's query says pageNumber 0");
  });

  it('reads a table whose pages are identical when the echoed query proves each page', async () => {
    const repeated: Table = { ...TABLE, rows: Array.from({ length: 4 }, () => ['Outage', 1]) };
    const source = await start({ page: (request) => ({ json: tablePage(repeated, request, { echo: true }) }) });
    const rows = await readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2, concurrency: new AdaptiveConcurrency(2) }));
    expect(rows).toEqual(repeated.rows);
  });

  it('refuses the same table without an echo, saying how to make its pages distinct', async () => {
    const repeated: Table = { ...TABLE, rows: Array.from({ length: 4 }, () => ['Outage', 1]) };
    const source = await start({ page: (request) => ({ json: tablePage(repeated, request) }) });
    const error = await failureOf(readAll(readPages(hostileClient(source, dispatcher), { jobName: 'hostile', itemsPerPage: 2 })));
    expect(error).toMatchObject({ check: 'page-repeated', pageNumber: 1 });
    expect(error.message).toMatch(/does not follow the page asked for.*add a column that tells them apart/);
  });
});

describe('ExportClient: a page fetched ahead of the consumer', () => {
  it('is read off the wire at once but parsed only when needed, and a bad body is retried then', async () => {
    // The first answer is not JSON: its retry can only happen once the page is parsed.
    const source = await start({ page: (request, index) => (index === 0 ? { body: '{"ok":true,"result":' } : { json: tablePage(TABLE, request) }) });
    let markNeeded!: (isNeeded: boolean) => void;
    const whenNeeded = new Promise<boolean>((resolve) => (markNeeded = resolve));
    let settled = false;
    const page = hostileClient(source, dispatcher, { itemsPerPage: 5 })
      .fetchPage(0, undefined, whenNeeded)
      .finally(() => (settled = true));
    // Asked at once (awaited, not assumed after 100 ms); then a moment for a wrong client to retry unasked.
    await waitUntil(() => source.pagesAsked().length > 0, 'the first ask of page 0', { everyMs: 5 });
    await sleep(100);
    expect(source.pagesAsked()).toEqual([0]);
    expect(settled).toBe(false);
    markNeeded(true);
    expect((await page).rows).toEqual(TABLE.rows);
    expect(source.pagesAsked()).toEqual([0, 0]);
  });

  it('drops an answer that is no longer needed without parsing or retrying it', async () => {
    const source = await start({ page: () => ({ body: 'not json' }) });
    const fetched = hostileClient(source, dispatcher).fetchPage(0, undefined, Promise.resolve(false));
    await expect(fetched).rejects.toThrow('page 0 was fetched ahead but is no longer needed');
    expect(source.pagesAsked()).toEqual([0]);
  });
});

describe('ExportClient: compressed and encoded bodies', () => {
  it.each(['gzip', 'br', 'deflate'] as const)('decodes a %s body exactly', async (encoding) => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request), encoding }) });
    const page = await hostileClient(source, dispatcher, { itemsPerPage: 5 }).fetchPage(0);
    expect(page.rows).toEqual(TABLE.rows);
    expect(source.requests.filter((r) => r.endpoint === 'export')).toHaveLength(1);
  });

  it('decodes a gzip body that trickles in pieces', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request), encoding: 'gzip', trickle: { bytes: 7, everyMs: 1 } }) });
    expect((await hostileClient(source, dispatcher, { itemsPerPage: 5 }).fetchPage(0)).rows).toEqual(TABLE.rows);
  });

  it('accepts a body that starts with a UTF-8 byte order mark', async () => {
    const source = await start({ page: (request) => ({ body: `\uFEFF${JSON.stringify(tablePage(TABLE, request))}` }) });
    expect((await hostileClient(source, dispatcher, { itemsPerPage: 5 }).fetchPage(0)).rows).toEqual(TABLE.rows);
  });

  it('keeps multi-byte characters split across chunks intact', async () => {
    const table: Table = { ...TABLE, rows: [['Störung – 東京 🚨', 1]] };
    const source = await start({ page: (request) => ({ json: tablePage(table, request), trickle: { bytes: 1, everyMs: 1 } }) });
    expect((await hostileClient(source, dispatcher).fetchPage(0)).rows).toEqual(table.rows);
  });

  it('retries a gzip stream cut short and reads the whole one sent next', async () => {
    const source = await start({
      page: (request, index) => ({ json: tablePage(TABLE, request), encoding: 'gzip', ...(index === 0 ? { truncateTo: 30 } : {}) }),
    });
    expect((await hostileClient(source, dispatcher, { itemsPerPage: 5 }).fetchPage(0)).rows).toEqual(TABLE.rows);
    expect(source.pagesAsked()).toEqual([0, 0]);
  });

  it('refuses gzip data sent without content-encoding, once, without printing its bytes', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request), encoding: 'gzip', undeclared: true }) });
    const error = await failureOf(hostileClient(source, dispatcher).fetchPage(0));
    expect(error).toMatchObject({ code: 'export_response_invalid', pageNumber: 0 });
    expect(error.message).toMatch(/page 0: unusable export response: body of \d+ bytes is gzip data but content-encoding does not say so$/);
    expect(source.pagesAsked()).toEqual([0]);
  });

  it.each(['gzip', 'br', 'deflate'] as const)('retries a corrupt %s stream and reads the whole one sent next', async (encoding) => {
    const source = await start({ page: (request, index) => ({ json: tablePage(TABLE, request), encoding, corrupt: index === 0 }) });
    const client = hostileClient(source, dispatcher, { itemsPerPage: 5 });
    expect((await client.fetchPage(0)).rows).toEqual(TABLE.rows);
    expect(source.pagesAsked()).toEqual([0, 0]);
  });

  it('fails with export_body_corrupt, naming the encoding and the decoder error, when every attempt is corrupt', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request), encoding: 'gzip', corrupt: true }) });
    const error = await failureOf(hostileClient(source, dispatcher, { retry: fastPolicy({ maxAttempts: 3 }) }).fetchPage(0));
    expect(error).toMatchObject({ code: 'export_body_corrupt', pageNumber: 0, encoding: 'gzip' });
    expect(error.message).toMatch(
      /^job hostile: page 0: unusable export response: content-encoding gzip could not be decoded \(corrupt stream: invalid distance too far back\) after \d+ bytes \(attempt 3; retried while the retry policy allowed\)$/,
    );
    expect(source.pagesAsked()).toEqual([0, 0, 0]);
  });

  it('retries a body that says gzip but is not, and fails naming the decoder error, printable', async () => {
    const source = await start({ page: () => ({ body: Buffer.from([0x00, 0xff, 0x10, 0x80, 0x7b]), headers: { 'content-encoding': 'gzip' } }) });
    const error = await failureOf(hostileClient(source, dispatcher, { retry: fastPolicy({ maxAttempts: 2 }) }).fetchPage(0));
    expect(error).toMatchObject({ code: 'export_body_corrupt' });
    expect(error.message).toMatch(/content-encoding gzip could not be decoded \(corrupt stream: incorrect header check\) after 5 bytes \(attempt 2;/);
    expect(error.message).toMatch(PRINTABLE);
    expect(source.pagesAsked()).toEqual([0, 0]);
  });

  it('refuses a content-encoding it cannot decode', async () => {
    const source = await start({ page: () => ({ body: 'whatever', headers: { 'content-encoding': 'zstd' } }) });
    const error = await failureOf(hostileClient(source, dispatcher).fetchPage(0));
    expect(error.message).toContain('content-encoding "zstd" is not supported (asked for gzip, br)');
  });

  it('refuses a body that is not valid UTF-8 instead of reading U+FFFD as data', async () => {
    const valid = Buffer.from(JSON.stringify(tablePage({ ...TABLE, rows: [['Xut', 1]] }, { pageNumber: 0, itemsPerPage: 2 } as never)));
    valid[valid.indexOf('Xut')] = 0xff;
    const source = await start({ page: () => ({ body: valid }) });
    const error = await failureOf(hostileClient(source, dispatcher).fetchPage(0));
    expect(error).toMatchObject({ code: 'export_response_invalid' });
    expect(error.message).toMatch(/page 0: unusable export response: body is not valid UTF-8$/);
  });

  it('quotes only printable text of a binary body that is not JSON', async () => {
    const source = await start({ page: () => ({ body: Buffer.from([0x3c, 0x62, 0x3e, 0x00, 0x01, 0x1b, 0x5b, 0x33, 0x31, 0x6d, 0x07]) }) });
    const error = await failureOf(hostileClient(source, dispatcher, { retry: fastPolicy({ maxAttempts: 1 }) }).fetchPage(0));
    expect(error.message).toMatch(/body is not JSON \(.*\): <b>·\[31m·$/);
    expect(error.message).toMatch(PRINTABLE);
  });
});

describe('ExportClient: answers that are not a page', () => {
  it.each([
    { name: 'a Regular error object', json: { ok: false, error: { status: 404, message: 'tile t-1 not found' } }, says: 'tile t-1 not found' },
    { name: 'a bare string', json: { ok: false, error: 'tile t-1 not found' }, says: 'tile t-1 not found' },
  ])('quotes the service message of an HTTP 200 with ok: false ($name), without retrying', async ({ json, says }) => {
    const source = await start({ page: () => ({ json }) });
    const error = await failureOf(hostileClient(source, dispatcher).fetchPage(0));
    expect(error).toMatchObject({ code: 'export_api_error', status: 200 });
    expect(error.message).toBe(`job hostile: page 0: export failed with HTTP 200: ${says}`);
    expect(source.pagesAsked()).toEqual([0]);
  });

  it('says so when ok: false comes without any message', async () => {
    const source = await start({ page: () => ({ json: { ok: false } }) });
    const error = await failureOf(hostileClient(source, dispatcher).fetchPage(0));
    expect(error.message).toBe('job hostile: page 0: unusable export response: ok: false without an error message');
  });

  it('refuses rows keyed by a header that occurs twice, naming the header and page', async () => {
    const source = await start({
      page: () => ({
        json: {
          ok: true,
          result: {
            navigation: { hasPrev: false, hasNext: false, rowsCount: 1, totalRows: 1 },
            headers: ['Type', 'Count', 'Type'],
            dataTypes: ['text', 'number', 'text'],
            rows: [{ Type: 'Outage', Count: 3 }],
          },
        },
      }),
    });
    const error = await failureOf(hostileClient(source, dispatcher).fetchPage(0));
    expect(error).toMatchObject({ code: 'export_response_invalid', pageNumber: 0 });
    expect(error.message).toContain('page 0: unusable export response: header "Type" occurs twice (columns 0 and 2)');
  });
});

describe('ExportClient: one deadline per request', () => {
  it('gives up on a body that trickles one byte every 250 ms at the deadline, and retries it like a timeout', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request), trickle: { bytes: 1, everyMs: 250 } }) });
    const started = Date.now();
    const client = hostileClient(source, dispatcher, { timeouts: { headersMs: 5000, bodyMs: 5000, totalMs: 1000 }, retry: fastPolicy({ maxAttempts: 2 }) });
    const error = await failureOf(client.fetchPage(0));
    const elapsed = Date.now() - started;
    expect(error).toMatchObject({ code: 'source_deadline_exceeded', deadlineMs: 1000 });
    expect(error.message).toBe('job hostile: page 0: no complete answer within 1000 ms (headers and body together)');
    expect(source.pagesAsked()).toEqual([0, 0]);
    // Both attempts waited out the whole deadline (the 5 s body limit would have said otherwise).
    expect(elapsed).toBeGreaterThanOrEqual(1900);
  });

  it('counts slow headers against the same deadline', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request), delayMs: 3000 }) });
    const client = hostileClient(source, dispatcher, { timeouts: { headersMs: 10_000, bodyMs: 10_000, totalMs: 300 }, retry: fastPolicy({ maxAttempts: 1 }) });
    expect(await failureOf(client.fetchPage(0))).toMatchObject({ code: 'source_deadline_exceeded' });
  });
});

describe('ExportClient: Retry-After', () => {
  it.each([
    { value: '3600', ceiling: 30_000, says: 'HTTP 429 with Retry-After: 3600 (more than the 30 s this job waits): rate limit exceeded' },
    {
      value: 'Wed, 01 Jan 2099 00:00:00 GMT',
      ceiling: 30_000,
      says: 'HTTP 429 with Retry-After: Wed, 01 Jan 2099 00:00:00 GMT (more than the 30 s this job waits)',
    },
    { value: '2', ceiling: 1500, says: 'HTTP 429 with Retry-After: 2 (more than the 1.5 s this job waits)' },
  ])('fails at once on Retry-After: $value above what the job waits, quoting it', async ({ value, ceiling, says }) => {
    const source = await start({
      page: () => ({ status: 429, headers: { 'retry-after': value }, json: { error: { status: 429, message: 'rate limit exceeded' } } }),
    });
    const error = await failureOf(hostileClient(source, dispatcher, { retry: fastPolicy({ maxDelayMs: ceiling }) }).fetchPage(0));
    expect(error).toMatchObject({ code: 'source_retry_after_too_long', status: 429, retryAfter: value });
    expect(error.message).toContain(`job hostile: page 0: ${says}`);
    // At once: asked once, no wait before a second try (retry-policy.test.ts sees no retry scheduled).
    expect(source.pagesAsked()).toEqual([0]);
  });

  it('waits a Retry-After within the ceiling before the next attempt', async () => {
    const source = await start({
      page: (request, index) => (index === 0 ? { status: 503, headers: { 'retry-after': '1' } } : { json: tablePage(TABLE, request) }),
    });
    await hostileClient(source, dispatcher, { retry: fastPolicy({ maxDelayMs: 2000 }) }).fetchPage(0);
    const [first, second] = source.requests.filter((r) => r.endpoint === 'export');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
  });

  it('still backs off after Retry-After: 0', async () => {
    // random 0.999: the first backoff is just under baseDelayMs, so the gap shows it was waited.
    const source = await start({
      page: (request, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '0' } } : { json: tablePage(TABLE, request) }),
    });
    await hostileClient(source, dispatcher, { retry: fastPolicy({ baseDelayMs: 300, maxDelayMs: 1000, random: () => 0.999 }) }).fetchPage(0);
    const [first, second] = source.requests.filter((r) => r.endpoint === 'export');
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(280);
  });
});

describe('ExportClient with tracing on', () => {
  afterEach(() => {
    useTelemetry(NO_TELEMETRY);
    vi.restoreAllMocks();
  });

  it('asks its token and the source exactly as with tracing off (tracing must not change behaviour)', async () => {
    const source = await start({ page: (request) => ({ json: tablePage(TABLE, request) }) });
    const asked: string[] = [];
    const original = SessionToken.prototype.get;
    vi.spyOn(SessionToken.prototype, 'get').mockImplementation(function (this: SessionToken) {
      asked.push(telemetry().enabled ? 'on' : 'off');
      return original.call(this);
    });
    const off = await hostileClient(source, dispatcher).fetchPage(0);
    useTelemetry({ ...NO_TELEMETRY, enabled: true });
    const on = await hostileClient(source, dispatcher).fetchPage(0);
    expect(on.rows).toEqual(off.rows);
    expect(asked.filter((state) => state === 'on')).toHaveLength(asked.filter((state) => state === 'off').length);
    expect(source.pagesAsked()).toEqual([0, 0]);
  });
});
