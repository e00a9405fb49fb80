import { describe, expect, it } from 'vitest';
import { startSandbox } from './index.js';
import { exportPage, fetchToken, item } from './test-client.js';
import { waitUntil } from '../test/support/wait-until.js';

const QUERY = { items: [item('Number', '[incident.number]', 'number')] };

describe('maxConcurrentExports', () => {
  it('answers 429 with Retry-After 0 to export requests beyond the limit in flight', async () => {
    const sandbox = await startSandbox({ incidents: 50, maxConcurrentExports: 2, latencyMs: 300 });
    try {
      const token = await fetchToken(sandbox);
      const answers = await Promise.all(Array.from({ length: 5 }, (_, pageNumber) => exportPage(sandbox, token, QUERY, { pageNumber, itemsPerPage: 10 })));
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 200, 429, 429, 429]);
      const refused = answers.filter((a) => a.status === 429);
      for (const answer of refused) {
        expect(answer.headers.get('retry-after')).toBe('0');
        expect(answer.json).toEqual({ error: { status: 429, message: expect.stringContaining('limit 2') } });
      }
      const exports = sandbox.requests.filter((r) => r.endpoint === 'export');
      expect(Math.max(...exports.map((r) => r.inFlight))).toBe(2);
      expect(exports.filter((r) => r.faults.includes('concurrency-limit'))).toHaveLength(3);
      // Once the two in flight have finished, there is room again.
      expect((await exportPage(sandbox, token, QUERY)).status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });

  it('serves every request when there is no limit, recording how many were in flight', async () => {
    const sandbox = await startSandbox({ incidents: 50, latencyMs: 200 });
    try {
      const token = await fetchToken(sandbox);
      const answers = await Promise.all(Array.from({ length: 4 }, () => exportPage(sandbox, token, QUERY)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      expect(Math.max(...sandbox.requests.map((r) => r.inFlight))).toBe(4);
    } finally {
      await sandbox.close();
    }
  });

  it('does not count token requests against the limit', async () => {
    const sandbox = await startSandbox({ incidents: 5, maxConcurrentExports: 1, latencyMs: 200 });
    try {
      const token = await fetchToken(sandbox);
      const slow = exportPage(sandbox, token, QUERY);
      // The export holds the one place before the token is asked for (not a 50 ms guess).
      await waitUntil(() => sandbox.requests.some((request) => request.endpoint === 'export'), 'the export request in flight');
      await expect(fetchToken(sandbox)).resolves.toEqual(expect.any(String));
      expect((await slow).status).toBe(200);
    } finally {
      await sandbox.close();
    }
  });
});

describe('latencyMs', () => {
  it('adds the latency to every export page but not to token requests', async () => {
    // An hour's latency: a token request that waited for it would outlast the test's limit, so no
    // upper bound on the clock is needed (a busy machine can take 140 ms over any request).
    const slow = await startSandbox({ incidents: 5, latencyMs: 3_600_000 });
    try {
      await expect(fetchToken(slow)).resolves.toEqual(expect.any(String));
    } finally {
      await slow.close();
    }
    const sandbox = await startSandbox({ incidents: 5, latencyMs: 150 });
    try {
      const token = await fetchToken(sandbox);
      const started = Date.now();
      await exportPage(sandbox, token, QUERY);
      expect(Date.now() - started).toBeGreaterThanOrEqual(145);
    } finally {
      await sandbox.close();
    }
  });
});
