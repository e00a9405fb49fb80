import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TILE_IDS, DEMO_TILES, SANDBOX_TILE, startSandbox, type Sandbox } from './index.js';
import { exportPage, exportUrl, fetchToken, item, postJson } from './test-client.js';

const NUMBERS = { items: [item('Number', '[incident.number]', 'number'), item('Created', '[incident.created]', 'datetime')] };

describe('export endpoint', () => {
  let sandbox: Sandbox;
  let token: string;
  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 120 });
    token = await fetchToken(sandbox);
  });
  afterAll(() => sandbox.close());

  it('answers {ok: true, result} with navigation, headers, dataTypes, rows, sourceImported and the query', async () => {
    const answer = await exportPage(sandbox, token, NUMBERS, { pageNumber: 0, itemsPerPage: 50 });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(answer.json.ok).toBe(true);
    const { result } = answer.json;
    expect(result.navigation).toEqual({ hasPrev: false, hasNext: true, rowsCount: 50, totalRows: 120 });
    expect(result.headers).toEqual(['Number', 'Created']);
    expect(result.dataTypes).toEqual(['number', 'datetime']);
    expect(result.sourceImported).toBe(false);
    expect(result.query.items).toEqual(NUMBERS.items);
    expect(result.query.options).toMatchObject({ pageNumber: 0, itemsPerPage: 50 });
    expect(result.rows[0]).toEqual([1, expect.any(Number)]);
  });

  it('defaults to page 0 of 50 rows when the query has no options', async () => {
    const answer = await postJson(exportUrl(sandbox), { items: NUMBERS.items }, { authorization: `Bearer ${token}` });
    expect(answer.status).toBe(200);
    expect(answer.json.result.navigation).toMatchObject({ rowsCount: 50, hasPrev: false });
    expect(answer.json.result.rows[0][0]).toBe(1);
  });

  describe('authentication', () => {
    it('returns 401 with a Regular error object without an Authorization header', async () => {
      const answer = await postJson(exportUrl(sandbox), NUMBERS);
      expect(answer.status).toBe(401);
      expect(answer.json).toEqual({ error: { status: 401, message: expect.stringContaining('Bearer') } });
      expect(answer.headers.get('www-authenticate')).toBe('Bearer');
    });

    it('returns 401 invalid token for a token it never issued', async () => {
      const answer = await postJson(exportUrl(sandbox), NUMBERS, { authorization: 'Bearer not-a-token' });
      expect(answer.status).toBe(401);
      expect(answer.json).toEqual({ error: { status: 401, message: 'invalid token' } });
      expect(answer.headers.get('www-authenticate')).toContain('invalid_token');
    });

    it('returns 401 for a scheme other than Bearer', async () => {
      const answer = await postJson(exportUrl(sandbox), NUMBERS, { authorization: `Basic ${token}` });
      expect(answer.status).toBe(401);
      expect(answer.json.error.message).toContain('malformed');
    });

    it('checks the token before anything else (an unauthenticated caller learns nothing about tiles)', async () => {
      const answer = await postJson(exportUrl(sandbox, 'no-such-tile'), 'not json', { 'content-type': 'text/plain' });
      expect(answer.status).toBe(401);
    });

    it('returns 401 for a token issued by another sandbox (tokens belong to their issuer)', async () => {
      const other = await startSandbox({ incidents: 1 });
      try {
        const foreign = await fetchToken(other);
        expect((await exportPage(sandbox, foreign, NUMBERS)).status).toBe(401);
      } finally {
        await other.close();
      }
    });
  });

  describe('content type', () => {
    it.each([
      ['text/plain', 'text/plain'],
      ['a non-UTF-8 charset', 'application/json; charset=iso-8859-1'],
      ['form encoding', 'application/x-www-form-urlencoded'],
    ])('returns 415 for %s', async (_case, contentType) => {
      const answer = await postJson(exportUrl(sandbox), NUMBERS, { authorization: `Bearer ${token}`, 'content-type': contentType });
      expect(answer.status).toBe(415);
      expect(answer.json).toEqual({ error: { status: 415, message: expect.stringContaining('application/json') } });
    });

    it('returns 415 when the content type is missing', async () => {
      const response = await fetch(exportUrl(sandbox), {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: new Blob([JSON.stringify(NUMBERS)]),
      });
      expect(response.status).toBe(415);
    });

    it.each(['application/json; charset=utf-8', 'Application/JSON;charset=UTF-8'])('accepts %s', async (contentType) => {
      const answer = await postJson(exportUrl(sandbox), NUMBERS, { authorization: `Bearer ${token}`, 'content-type': contentType });
      expect(answer.status).toBe(200);
    });
  });

  describe('tile id', () => {
    it('returns 400 invalid id for an unknown tile', async () => {
      const answer = await exportPage(sandbox, token, NUMBERS, {}, 'no-such-tile');
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { status: 400, message: 'invalid id' } });
    });

    it('returns 400 invalid id when the tile id is missing', async () => {
      const answer = await postJson(`${sandbox.url}/api/v1/topics/incident/execute`, NUMBERS, { authorization: `Bearer ${token}` });
      expect(answer.status).toBe(400);
      expect(answer.json.error.message).toBe('invalid id');
    });

    it('knows the demo tiles and the sandbox tile by default', async () => {
      expect(DEFAULT_TILE_IDS).toEqual(expect.arrayContaining([...Object.values(DEMO_TILES), SANDBOX_TILE]));
      for (const tile of DEFAULT_TILE_IDS) expect((await exportPage(sandbox, token, NUMBERS, {}, tile)).status).toBe(200);
    });

    it('reads the tile id from the configured query-string item and knows only the configured tiles', async () => {
      const custom = await startSandbox({ incidents: 3, tileParam: 'tile', tiles: ['t-1'] });
      try {
        const customToken = await fetchToken(custom);
        const headers = { authorization: `Bearer ${customToken}` };
        expect((await postJson(`${custom.url}/api/v1/topics/incident/execute?tile=t-1`, NUMBERS, headers)).status).toBe(200);
        expect((await postJson(`${custom.url}/api/v1/topics/incident/execute?tileId=t-1`, NUMBERS, headers)).status).toBe(400);
        expect((await postJson(`${custom.url}/api/v1/topics/incident/execute?tile=${SANDBOX_TILE}`, NUMBERS, headers)).status).toBe(400);
      } finally {
        await custom.close();
      }
    });
  });

  describe('query validation', () => {
    const send = (body: unknown) => postJson(exportUrl(sandbox), body, { authorization: `Bearer ${token}` });

    it('returns 400 for a body that is not JSON', async () => {
      const answer = await send('{"items": [');
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual({ error: { status: 400, message: 'the body is not valid JSON' } });
    });

    it.each([
      ['a JSON array', [], 'Export query object'],
      ['a query without items', { options: {} }, 'items'],
      ['an empty item list', { items: [] }, 'at least one item'],
      ['an item without a formula', { items: [{ header: 'A', dataType: 'text' }] }, 'items[0].formula'],
      ['an unknown dataType', { items: [item('A', '[incident.number]', 'integer' as 'number')] }, 'items[0].dataType: must be one of number, text, datetime'],
      [
        'filter values that are not strings',
        { items: [item('A', '[incident.number]', 'number', { filters: [{ operator: 'gt', values: [3] }] })] },
        'items[0].filters[0].values',
      ],
      ['a negative pageNumber', { items: NUMBERS.items, options: { pageNumber: -1 } }, 'options.pageNumber'],
      ['itemsPerPage above 10000', { items: NUMBERS.items, options: { itemsPerPage: 10_001 } }, 'options.itemsPerPage'],
      ['an unknown field', { items: [item('Owner', '[incident.owner]', 'text')] }, 'items[0] ("Owner"): unknown field [incident.owner]'],
      ['a syntax error', { items: [item('Bad', 'round([incident.number]', 'number')] }, "expected ')'"],
      ['a ref to no item', { items: [item('A', '[ref:missing] + 1', 'number')] }, '[ref:missing] names no item'],
      [
        'an unknown operator',
        { items: [item('A', '[incident.number]', 'number', { filters: [{ operator: 'lt', values: ['3'] }] })] },
        "unsupported filter operator 'lt'",
      ],
    ])('returns 400 with a helpful message for %s', async (_case, body, message) => {
      const answer = await send(body);
      expect(answer.status).toBe(400);
      expect(answer.json.error.status).toBe(400);
      expect(answer.json.error.message).toContain(message);
    });
  });

  it('returns 405 for a GET and 404 for an unknown path, with Regular error objects', async () => {
    const get = await fetch(exportUrl(sandbox), { headers: { authorization: `Bearer ${token}` } });
    expect(get.status).toBe(405);
    expect(await get.json()).toEqual({ error: { status: 405, message: expect.any(String) } });
    const unknown = await postJson(`${sandbox.url}/api/v1/incidents`, {}, { authorization: `Bearer ${token}` });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error.status).toBe(404);
  });

  it('records every request with endpoint, page, status and timing', async () => {
    sandbox.clearRequests();
    await exportPage(sandbox, token, NUMBERS, { pageNumber: 1, itemsPerPage: 7 });
    await exportPage(sandbox, token, NUMBERS, {}, 'no-such-tile');
    expect(sandbox.requests).toHaveLength(2);
    expect(sandbox.requests[0]).toMatchObject({
      endpoint: 'export',
      method: 'POST',
      tileId: SANDBOX_TILE,
      pageNumber: 1,
      itemsPerPage: 7,
      status: 200,
      faults: [],
      inFlight: 1,
    });
    expect(sandbox.requests[1]).toMatchObject({ tileId: 'no-such-tile', status: 400 });
    expect(sandbox.requests[0]!.respondedAt).toBeGreaterThanOrEqual(sandbox.requests[0]!.receivedAt);
    expect(sandbox.requests[1]!.seq).toBe(sandbox.requests[0]!.seq + 1);
  });
});

describe('export wire formats', () => {
  const query = {
    items: [
      item('Number', '[incident.number]', 'number'),
      item('Created', '[incident.created]', 'datetime'),
      item('Day', '[incident.created]', 'datetime', { format: 'year_month_number_day_number_hyphen' }),
    ],
  };

  async function firstRow(options: Parameters<typeof startSandbox>[0]): Promise<{ sandbox: Sandbox; row: unknown; headers: string[] }> {
    const sandbox = await startSandbox({ incidents: 3, ...options });
    const answer = await exportPage(sandbox, await fetchToken(sandbox), query);
    await sandbox.close();
    return { sandbox, row: answer.json.result.rows[0], headers: answer.json.result.headers };
  }

  it('sends unformatted datetimes as epoch milliseconds by default', async () => {
    const { row } = await firstRow({});
    const [, created, day] = row as [number, number, string];
    expect(typeof created).toBe('number');
    expect(day).toBe(new Date(created).toISOString().slice(0, 10));
  });

  it('sends the spec Timestamp object {$date: ms} when asked', async () => {
    const { row } = await firstRow({ datetimeFormat: 'timestamp-object' });
    const [, created, day] = row as [number, { $date: number }, string];
    expect(created).toEqual({ $date: expect.any(Number) });
    expect(day).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('sends ISO 8601 strings when asked, leaving formatted datetimes alone', async () => {
    const { row } = await firstRow({ datetimeFormat: 'iso' });
    const [, created, day] = row as [number, string, string];
    expect(created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(day).toBe(created.slice(0, 10));
  });

  it('sends rows as objects keyed by header when asked', async () => {
    const { row } = await firstRow({ rowShape: 'object' });
    expect(row).toEqual({ Number: 1, Created: expect.any(Number), Day: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
  });
});
