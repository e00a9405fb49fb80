import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE, type RecordedRequest, type Sandbox } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';
import { sandboxForAll } from '../support/sandbox-fixture.js';

// Behaviour of parallel paging end to end (CLI → sandbox over loopback → CSV). No timings are
// asserted: the benchmark (npm run bench) measures speed; these tests pin what must hold at speed.

const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };

const temp = tempDirForAll();

/** Runs the one job against `sandbox` with these source settings; returns the CSV and the run's exports. */
async function exportCsv(sandbox: Sandbox, name: string, source: Record<string, unknown>) {
  const workspace = await writeWorkspace(path.join(temp.path, name), sandbox, [job], source);
  const before = sandbox.requests.length;
  const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
  const exports = sandbox.requests.slice(before).filter((request) => request.endpoint === 'export');
  const summary = result.logs.find((line) => line.msg === 'run finished')?.summary as { tiles: Array<{ retries: number }> } | undefined;
  const csv = result.exitCode === 0 ? await readFile(path.join(workspace.outDir, 'incident_detail.csv')) : undefined;
  return { result, csv, exports, retries: summary?.tiles[0]?.retries };
}

const refused = (request: RecordedRequest) => request.faults.includes('concurrency-limit');

describe('parallel paging against a source that allows fewer requests at once than configured', () => {
  // The sandbox answers 429 (Retry-After: 0) to an export arriving while K are in flight.
  const K = 2;
  const fixture = sandboxForAll({ incidents: 600, latencyMs: 20, maxConcurrentExports: K });

  it('succeeds at concurrency 8, settles within the limit after the first cuts, and spends no retries on it', async () => {
    // 600 rows at 10 per page: 60 pages, enough rounds for the limit to settle.
    const parallel = await exportCsv(fixture.sandbox, 'aimd-8', { itemsPerPage: 10, concurrency: 8 });
    expect(parallel.result.stderr).toMatch(/1 succeeded/);
    expect(parallel.result.exitCode).toBe(0);

    // The first round went out at 8 and was cut: the source refused some of it.
    const firstRound = parallel.exports.slice(0, 8);
    expect(firstRound.some(refused)).toBe(true);

    // After the cuts: the source never saw more than K of ours at once (requests above K are
    // refused before they count), and tilehouse no longer hammers it: at least as many requests
    // are accepted as refused (the limit probes one above K now and then, as AIMD does).
    const lastHalf = parallel.exports.slice(Math.floor(parallel.exports.length / 2));
    for (const request of lastHalf.filter((r) => !refused(r))) expect(request.inFlight).toBeLessThanOrEqual(K);
    expect(lastHalf.filter(refused).length).toBeLessThanOrEqual(lastHalf.length / 2);
    // Being turned away for concurrency is not a failure: the run's retry budget is untouched.
    expect(parallel.retries).toBe(0);

    // And the output is exactly what one page at a time gives (which the limit never refuses).
    const sequential = await exportCsv(fixture.sandbox, 'aimd-1', { itemsPerPage: 10, concurrency: 1 });
    expect(sequential.exports.some(refused)).toBe(false);
    expect(parallel.csv?.equals(sequential.csv!)).toBe(true);
  });
});

describe('parallel paging with pages answered out of order', () => {
  const fixture = sandboxForAll({ incidents: 1200 });

  it('writes a CSV byte for byte equal to a sequential run', async () => {
    // 1200 rows at 20 per page: pages 0..59. A third of them, chosen by a seeded generator, are
    // answered 5-60 ms late, so later pages often arrive first.
    const ITEMS_PER_PAGE = 20;
    const PAGES = 60;
    let seed = 20261121;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    for (let pageNumber = 1; pageNumber < PAGES; pageNumber++) {
      if (random() < 1 / 3) fixture.sandbox.inject({ kind: 'delay', endpoint: 'export', pageNumber, delayMs: 5 + Math.floor(random() * 55) });
    }
    const parallel = await exportCsv(fixture.sandbox, 'order-8', { itemsPerPage: ITEMS_PER_PAGE, concurrency: 8 });
    fixture.sandbox.clearFaults();
    expect(parallel.result.exitCode).toBe(0);
    expect(parallel.exports).toHaveLength(PAGES);

    // The reordering really happened: some page was answered after a later page.
    const answered = [...parallel.exports].sort((a, b) => a.respondedAt! - b.respondedAt! || a.seq - b.seq);
    expect(answered.some((request, index) => index > 0 && request.pageNumber! < answered[index - 1]!.pageNumber!)).toBe(true);

    const sequential = await exportCsv(fixture.sandbox, 'order-1', { itemsPerPage: ITEMS_PER_PAGE, concurrency: 1 });
    expect(sequential.result.exitCode).toBe(0);
    expect(parallel.csv?.equals(sequential.csv!)).toBe(true);
    // 1200 data rows and the header, nothing lost or doubled.
    expect(parallel.csv!.toString('utf8').match(/\r\n(?=\d)/g)?.length).toBe(1200);
  });
});
