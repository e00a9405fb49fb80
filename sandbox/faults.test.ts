import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from './index.js';
import { exportPage, fetchToken, item, postJson, tokenBody } from './test-client.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitUntil } from '../test/support/wait-until.js';

const QUERY = { items: [item('Number', '[incident.number]', 'number'), item('Type', '[incident.type]', 'text')] };
const PAGE = { itemsPerPage: 10 };

describe('fault injection', () => {
  let sandbox: Sandbox;
  let token: string;
  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 35 });
    token = await fetchToken(sandbox);
  });
  afterAll(() => sandbox.close());
  afterEach(() => {
    sandbox.clearFaults();
    sandbox.clearRequests();
  });
  const page = (pageNumber = 0) => exportPage(sandbox, token, QUERY, { ...PAGE, pageNumber });

  describe('rate-limit', () => {
    it('answers 429 with a Regular error object and Retry-After in seconds', async () => {
      sandbox.inject({ kind: 'rate-limit', endpoint: 'export', retryAfter: 2 });
      const limited = await page();
      expect(limited.status).toBe(429);
      expect(limited.headers.get('retry-after')).toBe('2');
      expect(limited.json).toEqual({ error: { status: 429, message: 'rate limit exceeded' } });
      expect((await page()).status).toBe(200);
    });

    it('sends Retry-After as an HTTP-date when given a Date', async () => {
      const when = new Date('2026-07-01T00:00:05Z');
      sandbox.inject({ kind: 'rate-limit', endpoint: 'export', retryAfter: when });
      expect((await page()).headers.get('retry-after')).toBe('Wed, 01 Jul 2026 00:00:05 GMT');
    });

    it('sends Retry-After: 1 by default and none when retryAfter is null', async () => {
      sandbox.inject({ kind: 'rate-limit', endpoint: 'export' });
      sandbox.inject({ kind: 'rate-limit', endpoint: 'export', retryAfter: null });
      expect((await page()).headers.get('retry-after')).toBe('1');
      const second = await page();
      expect(second.status).toBe(429);
      expect(second.headers.has('retry-after')).toBe(false);
    });
  });

  it.each([500, 502, 503, 504] as const)('answers %i with a Regular error object', async (status) => {
    sandbox.inject({ kind: 'server-error', endpoint: 'export', status });
    const failed = await page();
    expect(failed.status).toBe(status);
    expect(failed.json).toEqual({ error: { status, message: expect.any(String) } });
    expect((await page()).status).toBe(200);
  });

  it('uses a given server-error message', async () => {
    sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 503, message: 'maintenance window' });
    expect((await page()).json.error.message).toBe('maintenance window');
  });

  it('answers late with delay, long enough for a client timeout to fire', async () => {
    // A sandbox of its own for the request the client gives up on: the server still holds it, and
    // when its delay ended it would take an answer fault (a header-mismatch) that a later test
    // injects into the shared one, at a moment only the machine's load decides. Closing this one
    // ends the delay instead.
    const own = await startSandbox({ incidents: 3 });
    try {
      own.inject({ kind: 'delay', endpoint: 'export', delayMs: 3_600_000 });
      const aborted = fetch(`${own.url}/api/v1/topics/incident/execute?tileId=sandbox-tile`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${await fetchToken(own)}` },
        body: JSON.stringify(QUERY),
        signal: AbortSignal.timeout(100),
      });
      await expect(aborted).rejects.toThrow(/timeout|aborted/i);
      // The client gave up while the sandbox held the answer back.
      expect(own.requests.find((request) => request.endpoint === 'export')).toMatchObject({ faults: ['delay'], status: null, respondedAt: null });
    } finally {
      await own.close();
    }
    sandbox.inject({ kind: 'delay', endpoint: 'export', delayMs: 150 });
    const slowStart = Date.now();
    const slow = await page();
    expect(slow.status).toBe(200);
    expect(Date.now() - slowStart).toBeGreaterThanOrEqual(140);
  });

  it('spends no answer fault on a request whose client gave up during its delay', async () => {
    // The answer of a request nobody waits for reaches nobody: the single-use header-mismatch
    // injected while it was held back belongs to the next request that gets an answer.
    sandbox.inject({ kind: 'delay', endpoint: 'export', delayMs: 200 });
    const giveUp = new AbortController();
    const abandoned = fetch(`${sandbox.url}/api/v1/topics/incident/execute?tileId=sandbox-tile`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ ...QUERY, options: { ...PAGE, pageNumber: 0 } }),
      signal: giveUp.signal,
    });
    await waitUntil(() => sandbox.requests.some((request) => request.endpoint === 'export'), 'the export request is being delayed');
    giveUp.abort();
    await expect(abandoned).rejects.toThrow(/aborted/i);
    sandbox.inject({ kind: 'header-mismatch', headers: ['Type', 'Number'] });
    // Not a guess at speed: both timers run in this process, and the delay's (200 ms, started
    // first) fires before this one (250 ms, started later), its request's handling running in between.
    await sleep(250);
    expect(sandbox.requests.find((request) => request.endpoint === 'export')).toMatchObject({ faults: ['delay'], status: null, respondedAt: null });
    expect((await page(0)).json.result.headers).toEqual(['Type', 'Number']);
  });

  it('resets the connection without a response', async () => {
    sandbox.inject({ kind: 'connection-reset', endpoint: 'export' });
    await expect(page()).rejects.toThrow(/fetch failed/);
    expect(sandbox.requests[0]).toMatchObject({ status: null, faults: ['connection-reset'] });
    expect((await page()).status).toBe(200);
  });

  it('answers 200 with a truncated JSON body whose content-length matches', async () => {
    sandbox.inject({ kind: 'malformed-json', endpoint: 'export' });
    const broken = await page();
    expect(broken.status).toBe(200);
    expect(broken.json).toBeUndefined();
    expect(Number(broken.headers.get('content-length'))).toBe(Buffer.byteLength(broken.text));
    const whole = await page();
    expect(whole.json.ok).toBe(true);
    expect(whole.text.startsWith(broken.text)).toBe(true);
    expect(broken.text.length).toBeLessThan(whole.text.length);
  });

  it('leaves error responses intact with malformed-json (it truncates only a 200)', async () => {
    sandbox.inject({ kind: 'malformed-json', endpoint: 'export' });
    const unauthenticated = await postJson(`${sandbox.url}/api/v1/topics/incident/execute?tileId=sandbox-tile`, QUERY);
    expect(unauthenticated.json).toEqual({ error: { status: 401, message: expect.any(String) } });
    expect((await page()).json).toBeUndefined();
  });

  describe('token-expiry', () => {
    it('lets a token serve N export calls, then answers 401 for it for good', async () => {
      const own = await fetchToken(sandbox);
      sandbox.inject({ kind: 'token-expiry', afterExportCalls: 2 });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await exportPage(sandbox, own, QUERY, PAGE)).status);
      expect(statuses).toEqual([200, 200, 401, 401]);
      const after = await exportPage(sandbox, own, QUERY, PAGE);
      expect(after.json).toEqual({ error: { status: 401, message: 'token expired' } });
    });

    it('lets a new token work once the rule is spent', async () => {
      const first = await fetchToken(sandbox);
      sandbox.inject({ kind: 'token-expiry', afterExportCalls: 1 });
      expect((await exportPage(sandbox, first, QUERY, PAGE)).status).toBe(200);
      expect((await exportPage(sandbox, first, QUERY, PAGE)).status).toBe(401);
      const second = await fetchToken(sandbox);
      for (let i = 0; i < 3; i++) expect((await exportPage(sandbox, second, QUERY, PAGE)).status).toBe(200);
    });
  });

  describe('total-rows-drift', () => {
    it('reports totalRows + delta from the given page on', async () => {
      sandbox.inject({ kind: 'total-rows-drift', fromPage: 1, delta: 3 });
      const totals = [];
      for (let p = 0; p < 4; p++) totals.push((await page(p)).json.result.navigation.totalRows);
      expect(totals).toEqual([35, 38, 38, 38]);
    });

    it('stops after `times` pages when given', async () => {
      sandbox.inject({ kind: 'total-rows-drift', fromPage: 0, delta: -5, times: 1 });
      expect((await page(0)).json.result.navigation.totalRows).toBe(30);
      expect((await page(1)).json.result.navigation.totalRows).toBe(35);
    });
  });

  describe('header-mismatch', () => {
    it('changes the last header of the matching page only', async () => {
      sandbox.inject({ kind: 'header-mismatch', pageNumber: 1 });
      expect((await page(0)).json.result.headers).toEqual(['Number', 'Type']);
      expect((await page(1)).json.result.headers).toEqual(['Number', 'Type (changed)']);
      expect((await page(1)).json.result.headers).toEqual(['Number', 'Type']);
    });

    it('sends the given headers', async () => {
      sandbox.inject({ kind: 'header-mismatch', headers: ['Type', 'Number'] });
      expect((await page(2)).json.result.headers).toEqual(['Type', 'Number']);
    });
  });

  describe('matching', () => {
    it('matches only the given page', async () => {
      sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 503, pageNumber: 2 });
      expect([(await page(0)).status, (await page(1)).status, (await page(2)).status, (await page(2)).status]).toEqual([200, 200, 503, 200]);
    });

    it('matches the n-th call counted from injection', async () => {
      await page();
      sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500, call: 3 });
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await page()).status);
      expect(statuses).toEqual([200, 200, 500, 200, 200]);
    });

    it('fires `times` times, then is spent', async () => {
      sandbox.inject({ kind: 'rate-limit', endpoint: 'export', times: 2, retryAfter: 0 });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await page()).status);
      expect(statuses).toEqual([429, 429, 200, 200]);
    });

    it('fires for good with times Infinity until cleared', async () => {
      sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 502, times: Number.POSITIVE_INFINITY });
      for (let i = 0; i < 3; i++) expect((await page()).status).toBe(502);
      sandbox.clearFaults();
      expect((await page()).status).toBe(200);
    });

    it('keeps token faults on the token endpoint', async () => {
      sandbox.inject({ kind: 'server-error', endpoint: 'token', status: 503 });
      expect((await page()).status).toBe(200);
      const tokenAnswer = await postJson(`${sandbox.url}/oauth/token`, tokenBody(sandbox));
      expect(tokenAnswer.status).toBe(503);
      expect(tokenAnswer.json).toEqual({ error: { status: 503, message: 'service unavailable' } });
      expect((await postJson(`${sandbox.url}/oauth/token`, tokenBody(sandbox))).status).toBe(200);
    });

    it('applies the first matching interruption in injection order and leaves later ones for later requests', async () => {
      sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 500 });
      sandbox.inject({ kind: 'server-error', endpoint: 'export', status: 504 });
      expect([(await page()).status, (await page()).status, (await page()).status]).toEqual([500, 504, 200]);
    });

    it('delays and then interrupts when both match', async () => {
      sandbox.inject({ kind: 'delay', endpoint: 'export', delayMs: 100 });
      sandbox.inject({ kind: 'rate-limit', endpoint: 'export' });
      const started = Date.now();
      expect((await page()).status).toBe(429);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      expect(sandbox.requests.at(-1)!.faults).toEqual(['delay', 'rate-limit']);
    });

    it('records the faults applied to each request', async () => {
      sandbox.inject({ kind: 'total-rows-drift', fromPage: 0, delta: 1, times: 1 });
      sandbox.inject({ kind: 'header-mismatch', pageNumber: 0 });
      await page(0);
      expect(sandbox.requests[0]).toMatchObject({ status: 200, pageNumber: 0, faults: ['total-rows-drift', 'header-mismatch'] });
    });

    it.each([
      [{ kind: 'server-error', endpoint: 'export', status: 501 }, 'status must be 500, 502, 503 or 504'],
      [{ kind: 'delay', endpoint: 'export', delayMs: -1 }, 'delayMs'],
      [{ kind: 'rate-limit', endpoint: 'export', call: 0 }, 'call is 1-based'],
      [{ kind: 'rate-limit', endpoint: 'export', times: 0 }, 'times'],
      [{ kind: 'rate-limit', endpoint: 'exports' }, 'endpoint'],
      [{ kind: 'explode', endpoint: 'export' }, "unknown kind 'explode'"],
    ])('refuses an invalid rule %j', (rule, message) => {
      expect(() => sandbox.inject(rule as never)).toThrow(message);
    });
  });
});

describe('closing the sandbox', () => {
  it('does not wait for a delayed answer', async () => {
    const sandbox = await startSandbox({ incidents: 3 });
    const token = await fetchToken(sandbox);
    // An hour's delay: a close that waited for it would outlast the test's limit, so no clock is
    // needed to tell; the close starts once the request is inside its delay, not after a guess.
    sandbox.inject({ kind: 'delay', endpoint: 'export', delayMs: 3_600_000 });
    const pending = exportPage(sandbox, token, QUERY).catch((error: unknown) => error);
    await waitUntil(
      () => sandbox.requests.some((request) => request.endpoint === 'export' && request.faults.length > 0),
      'the export request is being delayed',
    );
    await sandbox.close();
    expect(await pending).toBeInstanceOf(Error);
  });
});
