import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQueryOfRun } from '../support/queries.js';
import { spawnCli } from '../support/spawn-cli.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const RUNS = 8;
const INCIDENTS = 240;

/** Run i exports only incidents numbered above 10·i, so a file mixing two runs would show. */
function jobFor(run: number) {
  // No {runId} in the path: every run targets the same file.
  return { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQueryOfRun(run), sinks: [{ type: 'csv' }] };
}

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 150 });

beforeAll(async () => {
  // 12 pages of 20 rows at 150 ms each, one at a time: a run lasts ~2 s, so the 8 runs overlap
  // even when their starts spread out on a loaded machine.
});

describe(`${RUNS} simultaneous runs of one job writing one file`, () => {
  it('all exit 0, the file is exactly one whole run, and nothing else is left in the directory', async () => {
    const outDir = path.join(fixture.root, 'shared-out');
    const workspaces: Workspace[] = [];
    for (let run = 0; run < RUNS; run++) {
      const workspace = await writeWorkspace(path.join(fixture.root, `run-${run}`), fixture.sandbox, [jobFor(run)], { itemsPerPage: 20, concurrency: 1 });
      await writeFile(workspace.configFile, (await readFile(workspace.configFile, 'utf8')).replace(workspace.outDir, outDir));
      workspaces.push(workspace);
    }
    const before = fixture.sandbox.requests.length;
    const results = await Promise.all(
      workspaces.map((workspace) =>
        spawnCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(fixture.sandbox), timeoutMs: 45_000 }),
      ),
    );
    for (const [run, result] of results.entries()) {
      expect(result.timedOut, `run ${run} timed out`).toBe(false);
      expect(result.code, `run ${run}: ${result.stderr}`).toBe(0);
    }
    // They really overlapped: exports of several runs were in flight at once (each run pages one at a time).
    const exports = fixture.sandbox.requests.slice(before).filter((r) => r.endpoint === 'export');
    expect(Math.max(...exports.map((r) => r.inFlight))).toBeGreaterThanOrEqual(2);

    const csv = await readCsv(path.join(outDir, 'incident_detail.csv'));
    expect(csv.header).toEqual(['Number', 'Created', 'Description', 'Severity']);
    const numbers = csv.rows.map((row) => Number(row[0]));
    const run = (numbers[0] ?? 0) <= 10 ? 0 : Math.floor((numbers[0]! - 1) / 10);
    // Exactly run `run`'s rows: incidents 10·run+1 .. INCIDENTS, each once, in order.
    expect(numbers).toEqual(Array.from({ length: INCIDENTS - 10 * run }, (_, i) => 10 * run + 1 + i));
    expect(await listFiles(outDir)).toEqual(['incident_detail.csv']);
  }, 60_000);
});
