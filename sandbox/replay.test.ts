import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDING_FORMAT, type Recording, type ValueShape } from '../src/source/recording.js';
import { createReplay, synthesizeValue } from './replay.js';
import { startSandbox, type Sandbox } from './sandbox.js';
import { exportPage, fetchToken, item } from './test-client.js';
import { classifyValue } from '../src/source/recording.js';

const QUERY = { items: [item('Number', '[incident.number]', 'number'), item('Name', '[incident.name]', 'text')], options: { ignoreRepeatedRows: false } };

describe('sandbox echo option', () => {
  const sandboxes: Record<string, Sandbox> = {};
  beforeAll(async () => {
    for (const echo of ['request', 'saved-query', 'absent'] as const) sandboxes[echo] = await startSandbox({ incidents: 30, echo });
  });
  afterAll(async () => {
    for (const sandbox of Object.values(sandboxes)) await sandbox.close();
  });

  const page2 = async (echo: string) => {
    const sandbox = sandboxes[echo]!;
    const answer = await exportPage(sandbox, await fetchToken(sandbox), QUERY, { pageNumber: 2, itemsPerPage: 10 });
    expect(answer.status).toBe(200);
    return answer.json.result;
  };

  it('request (default): the request with its pageNumber and itemsPerPage', async () => {
    expect((await page2('request')).query).toEqual({ ...QUERY, options: { ignoreRepeatedRows: false, pageNumber: 2, itemsPerPage: 10 } });
  });

  it("saved-query: the tile's saved query, pageNumber 0 and the saved page size, whatever page was asked; the rows are still page 2's", async () => {
    const result = await page2('saved-query');
    expect(result.query).toEqual({ ...QUERY, options: { ignoreRepeatedRows: false, pageNumber: 0, itemsPerPage: 50 } });
    expect(result.rows[0]).toEqual([21, '21']);
    expect(result.navigation).toEqual({ hasPrev: true, hasNext: false, rowsCount: 10, totalRows: 30 });
  });

  it('absent: no query member at all', async () => {
    const result = await page2('absent');
    expect('query' in result).toBe(false);
    expect(result.rows).toHaveLength(10);
  });

  it('refuses an unknown mode', async () => {
    await expect(startSandbox({ echo: 'sometimes' as never })).rejects.toThrow('echo must be one of request, saved-query, absent');
  });
});

function recording(overrides: Partial<Recording> = {}): Recording {
  const shapes: ValueShape[][] = [
    [{ type: 'number', class: 'integer', count: 2, minLength: 1, maxLength: 1 }],
    [
      { type: 'string', class: 'iso-offset', count: 1, minLength: 25, maxLength: 25 },
      { type: 'null', class: 'null', count: 1 },
    ],
  ];
  return {
    format: RECORDING_FORMAT,
    recordedAt: '2026-07-01T00:00:00.000Z',
    tilehouse: '0.1.0',
    job: 'job',
    tile: 'tenant-tile',
    tileParam: 'tileId',
    query: QUERY,
    itemsPerPage: 2,
    pagesAsked: 1,
    withValues: true,
    exchanges: [],
    pages: [
      {
        pageNumber: 0,
        itemsPerPage: 2,
        navigation: { hasPrev: false, hasNext: true, rowsCount: 2, totalRows: 5 },
        headers: ['N', 'At'],
        dataTypes: ['number', 'datetime'],
        rowShape: 'array',
        query: { saved: true, options: { pageNumber: 0 } },
        rows: 2,
        columns: shapes,
        values: [
          [1, '2026-03-01T10:00:00+02:00'],
          [2, null],
        ],
      },
    ],
    behaviour: { echo: 'saved-query', hasPrev: 'always-false', compression: 'none', rowShape: 'array' },
    checks: { accepted: true },
    ...overrides,
  };
}

describe('replay', () => {
  it('serves recorded rows first, then rows of the recorded shapes up to totalRows, with the recorded echo and hasPrev', () => {
    const replay = createReplay(recording());
    const page0 = replay.answer({ options: { pageNumber: 0, itemsPerPage: 2 } }) as { body: { result: any } };
    expect(page0.body.result).toMatchObject({
      rows: [
        [1, '2026-03-01T10:00:00+02:00'],
        [2, null],
      ],
      query: { saved: true, options: { pageNumber: 0 } },
    });
    const page2 = (replay.answer({ options: { pageNumber: 2, itemsPerPage: 2 } }) as { body: { result: any } }).body.result;
    expect(page2.navigation).toEqual({ hasPrev: false, hasNext: false, rowsCount: 1, totalRows: 5 });
    expect(page2.query).toEqual({ saved: true, options: { pageNumber: 0 } });
    const [[n, at]] = page2.rows;
    expect(n).toBe(5);
    expect(at === null || classifyValue(at, 'datetime').class === 'iso-offset').toBe(true);
  });

  it('is deterministic: the same request gets the same rows', () => {
    const ask = { options: { pageNumber: 1, itemsPerPage: 2 } };
    expect(JSON.stringify(createReplay(recording()).answer(ask))).toBe(JSON.stringify(createReplay(recording()).answer(ask)));
  });

  it("echo 'request': the recorded echo with the request's pageNumber and itemsPerPage", () => {
    const replay = createReplay(recording({ behaviour: { echo: 'request', hasPrev: 'page-above-zero', compression: 'none', rowShape: 'array' } }));
    const result = (replay.answer({ options: { pageNumber: 1, itemsPerPage: 2 } }) as { body: { result: any } }).body.result;
    expect(result.query).toEqual({ saved: true, options: { pageNumber: 1, itemsPerPage: 2 } });
    expect(result.navigation.hasPrev).toBe(true);
  });

  it('a recorded page-size cap: never more rows per page than the tenant served', () => {
    const replay = createReplay(
      recording({ behaviour: { echo: 'absent', hasPrev: 'page-above-zero', compression: 'none', rowShape: 'array', pageSizeCap: 2 } }),
    );
    const result = (replay.answer({ options: { pageNumber: 0, itemsPerPage: 50 } }) as { body: { result: any } }).body.result;
    expect(result.rows).toHaveLength(2);
    expect(result.navigation).toMatchObject({ hasNext: true, totalRows: 5 });
    expect('query' in result).toBe(false);
  });

  it('refuses a recording without page 0', () => {
    expect(() => createReplay(recording({ pages: [] }))).toThrow('no page 0');
  });

  it('synthesizes values of the class they are asked for, keeping the recorded length where the class allows', () => {
    const cases: Array<[ValueShape, string]> = [
      [{ type: 'number', class: 'epoch-ms', count: 1 }, 'epoch-ms'],
      [{ type: 'string', class: 'iso-utc', count: 1, minLength: 20, maxLength: 20 }, 'iso-utc'],
      [{ type: 'string', class: 'iso-offset', count: 1, minLength: 29, maxLength: 29 }, 'iso-offset'],
      [{ type: 'string', class: 'iso-local', count: 1, minLength: 19, maxLength: 19 }, 'iso-local'],
      [{ type: 'string', class: 'numeric', count: 1, minLength: 6, maxLength: 6 }, 'numeric'],
      [{ type: 'string', class: 'date', count: 1 }, 'date'],
      [{ type: 'string', class: 'percentage', count: 1 }, 'percentage'],
      [{ type: 'string', class: 'text', count: 1, minLength: 12, maxLength: 12 }, 'text'],
      [{ type: 'object', class: 'timestamp-object', count: 1 }, 'timestamp-object'],
    ];
    for (const [shape, expected] of cases) {
      const value = synthesizeValue(shape, 7, 1);
      expect(classifyValue(value, 'datetime').class, JSON.stringify(value)).toBe(expected);
      if (shape.minLength !== undefined && typeof value === 'string') expect(value.length, value).toBe(shape.minLength);
    }
  });
});

describe('sandbox replay option', () => {
  let replaying: Sandbox;
  beforeAll(async () => {
    replaying = await startSandbox({
      replay: recording({ token: { status: 200, headers: { date: 'Tue, 03 Mar 2026 09:00:00 GMT' }, expiresIn: 120, fields: [] } }),
    });
  });
  afterAll(async () => replaying.close());

  it("accepts the recording's tile, issues tokens as usual, and carries the recorded Date", async () => {
    const answer = await exportPage(replaying, await fetchToken(replaying), QUERY, { pageNumber: 1, itemsPerPage: 2 }, 'tenant-tile');
    expect(answer.status).toBe(200);
    expect(answer.headers.get('date')).toBe('Tue, 03 Mar 2026 09:00:00 GMT');
    expect(answer.json.result.rows).toHaveLength(2);
  });

  it('still refuses a request without a token', async () => {
    const response = await fetch(`${replaying.url}/api/v1/topics/incident/execute?tileId=tenant-tile`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(response.status).toBe(401);
  });
});
