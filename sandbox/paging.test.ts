import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HARD_DESCRIPTIONS } from './dataset-vocabulary.js';
import { startSandbox, type Sandbox } from './index.js';
import { exportAll, exportPage, fetchToken, item } from './test-client.js';

const QUERY = {
  items: [
    item('Number', '[incident.number]', 'number'),
    item('Created', '[incident.created]', 'datetime'),
    item('Type', '[incident.type]', 'text'),
    item('Description', '[incident.description]', 'text'),
  ],
};

describe('export paging', () => {
  let sandbox: Sandbox;
  let token: string;
  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 237 });
    token = await fetchToken(sandbox);
  });
  afterAll(() => sandbox.close());

  it.each([1, 7, 50, 236, 237, 238, 10_000])('with %i rows per page, concatenating all pages gives exactly evaluate()', async (itemsPerPage) => {
    const { pages, rows } = await exportAll(sandbox, token, QUERY, itemsPerPage);
    expect(rows).toEqual(sandbox.evaluate(QUERY).rows);
    expect(pages).toHaveLength(Math.ceil(237 / itemsPerPage));
  });

  it('keeps navigation consistent on every page', async () => {
    const { pages } = await exportAll(sandbox, token, QUERY, 50);
    expect(pages.map((p) => p.navigation)).toEqual([
      { hasPrev: false, hasNext: true, rowsCount: 50, totalRows: 237 },
      { hasPrev: true, hasNext: true, rowsCount: 50, totalRows: 237 },
      { hasPrev: true, hasNext: true, rowsCount: 50, totalRows: 237 },
      { hasPrev: true, hasNext: true, rowsCount: 50, totalRows: 237 },
      { hasPrev: true, hasNext: false, rowsCount: 37, totalRows: 237 },
    ]);
  });

  it('ends with a full page and hasNext false when the rows divide evenly', async () => {
    const last = await exportPage(sandbox, token, { items: QUERY.items, options: {} }, { pageNumber: 0, itemsPerPage: 237 });
    expect(last.json.result.navigation).toEqual({ hasPrev: false, hasNext: false, rowsCount: 237, totalRows: 237 });
  });

  it('returns an empty page with hasNext false for a page beyond the end', async () => {
    const beyond = await exportPage(sandbox, token, QUERY, { pageNumber: 5, itemsPerPage: 50 });
    expect(beyond.status).toBe(200);
    expect(beyond.json.result.rows).toEqual([]);
    expect(beyond.json.result.navigation).toEqual({ hasPrev: true, hasNext: false, rowsCount: 0, totalRows: 237 });
    expect(beyond.json.result.headers).toEqual(['Number', 'Created', 'Type', 'Description']);
  });

  it('returns one empty page for a result with no rows', async () => {
    const none = { items: [item('Number', '[incident.number]', 'number', { filters: [{ operator: 'gt', values: ['1000000'] }] })] };
    const page = await exportPage(sandbox, token, none, { pageNumber: 0, itemsPerPage: 50 });
    expect(page.json.result.navigation).toEqual({ hasPrev: false, hasNext: false, rowsCount: 0, totalRows: 0 });
    expect(page.json.result.rows).toEqual([]);
  });

  it('serves pages in any order with the same content', async () => {
    const third = await exportPage(sandbox, token, QUERY, { pageNumber: 2, itemsPerPage: 30 });
    await exportPage(sandbox, token, QUERY, { pageNumber: 0, itemsPerPage: 30 });
    const again = await exportPage(sandbox, token, QUERY, { pageNumber: 2, itemsPerPage: 30 });
    expect(again.json.result.rows).toEqual(third.json.result.rows);
    expect(third.json.result.rows[0][0]).toBe(61);
  });

  it('carries every hard description byte for byte through JSON', async () => {
    const { rows } = await exportAll(sandbox, token, QUERY, 100);
    const descriptions = new Set(rows.map((row) => (row as unknown[])[3]));
    for (const hard of HARD_DESCRIPTIONS) expect(descriptions).toContain(hard);
  });
});

describe('determinism', () => {
  it('gives two sandboxes with the same seed identical pages', async () => {
    const a = await startSandbox({ incidents: 300, seed: 7 });
    const b = await startSandbox({ incidents: 300, seed: 7 });
    try {
      const pageA = await exportPage(a, await fetchToken(a), QUERY, { pageNumber: 3, itemsPerPage: 40 });
      const pageB = await exportPage(b, await fetchToken(b), QUERY, { pageNumber: 3, itemsPerPage: 40 });
      expect(pageA.text).toBe(pageB.text);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('gives different data for a different seed', async () => {
    const a = await startSandbox({ incidents: 300, seed: 7 });
    const b = await startSandbox({ incidents: 300, seed: 8 });
    try {
      expect(a.evaluate(QUERY).rows).not.toEqual(b.evaluate(QUERY).rows);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('uses the fixed default now, 2026-07-01T00:00:00Z, so runs are reproducible', async () => {
    const sandbox = await startSandbox({ incidents: 10 });
    try {
      expect(sandbox.now.toISOString()).toBe('2026-07-01T00:00:00.000Z');
    } finally {
      await sandbox.close();
    }
  });
});

describe('sandbox.evaluate', () => {
  it('throws the message the endpoint would answer with 400', async () => {
    const sandbox = await startSandbox({ incidents: 5 });
    try {
      expect(() => sandbox.evaluate(QUERY, 'no-such-tile')).toThrow('invalid id');
      expect(() => sandbox.evaluate({ items: [item('A', '[incident.nope]', 'text')] })).toThrow('items[0] ("A"): unknown field [incident.nope]');
      expect(() => sandbox.evaluate({ items: [] })).toThrow('a query needs at least one item');
    } finally {
      await sandbox.close();
    }
  });

  it('renders datetimes as the endpoint does', async () => {
    const sandbox = await startSandbox({ incidents: 5, datetimeFormat: 'timestamp-object' });
    try {
      expect(sandbox.evaluate(QUERY).rows[0]![1]).toEqual({ $date: expect.any(Number) });
    } finally {
      await sandbox.close();
    }
  });
});
