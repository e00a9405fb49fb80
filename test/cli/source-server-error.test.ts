// A source that answers 5xx on every try (issue 62): its own code, `source_server_error`, which the
// catalogue calls retryable, at the export and the token endpoint alike; never `export_api_error`
// (a 4xx refusal: the same request refused again on every run). A `run` and a `backfill` window,
// through the CLI against the sandbox's fault injection: the code, the exit code, the retryable
// flag in `--json` and in `--summary-json`, and the re-run command a backfill prints.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { ERROR_CODES } from '../../src/error-codes.js';
import { listFiles, runCli, sandboxEnv, summaryOf } from '../support/cli-harness.js';
import { dailySeverityQuery, detailCsvJob } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';
import { dayFromToday } from '../support/window-oracle.js';

const dailyJob = {
  name: 'daily_severity',
  tile: SANDBOX_TILE,
  timezone: 'UTC',
  query: dailySeverityQuery,
  sinks: [{ type: 'csv' }],
  columns: { Day: { type: 'DATE' }, Incidents: { type: 'INT64' } },
  backfill: { item: 'day', bucketColumn: 'Day' },
};
// Windows are relative to the sandbox's "now", the real clock here.
const fixture = sandboxWorkspaceForAll(
  { incidents: 200, now: new Date() },
  [detailCsvJob, dailyJob, { ...detailCsvJob, name: 'wrong_tile', tile: 'no-such-tile' }],
  { itemsPerPage: 50 },
);
afterEach(() => fixture.sandbox.clearFaults());

const flags = () => ['--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir];
const cli = (args: string[]) => runCli([...args, ...flags()], { env: sandboxEnv(fixture.sandbox) });

describe('a source answering 5xx on every attempt', () => {
  it('the catalogue calls source_server_error retryable, exit 1, and export_api_error a refusal', () => {
    expect(ERROR_CODES.source_server_error).toMatchObject({ exit: 1, retryable: true });
    expect(ERROR_CODES.export_api_error).toMatchObject({ exit: 1, retryable: false });
  });

  it.each([500, 502, 503, 504] as const)('run: the export endpoint answering %i on every try fails source_server_error, retryable, exit 1', async (status) => {
    fixture.sandbox.inject({ endpoint: 'export', kind: 'server-error', status, times: Number.POSITIVE_INFINITY, message: `down for ${status}` });
    const summaryFile = path.join(fixture.root, `summary-${status}.json`);
    const result = await cli(['run', '--job', 'incident_detail', '--json']);
    expect(result.exitCode, result.stderr).toBe(1);
    const summary = summaryOf(result.stdout, 'run');
    expect(summary.exitCode).toBe(1);
    const tile = summary.tiles[0]!;
    expect(tile.status).toBe('failed');
    expect(tile.error).toEqual({
      code: 'source_server_error',
      message: `job incident_detail: page 0: the server failed with HTTP ${status}: down for ${status}`,
      retryable: true,
    });
    // Retried as far as the policy allowed (cli-harness's FAST_RETRY: 5 attempts), not refused at once.
    expect(tile.retries).toBe(4);
    expect(result.stderr).toContain(`  FAIL incident_detail (`);
    expect(result.stderr).toMatch(
      new RegExp(`FAIL incident_detail \\([\\d.]+ s\\): source_server_error: page 0: the server failed with HTTP ${status}: down for ${status}\\n`),
    );
    expect(result.stderr).not.toContain('export_api_error');

    // The same document in a summary file.
    const written = await cli(['run', '--job', 'incident_detail', '--summary-json', summaryFile]);
    expect(written.exitCode).toBe(1);
    const file = summaryOf(await readFile(summaryFile, 'utf8'), 'run');
    expect(file.tiles[0]!.error).toMatchObject({ code: 'source_server_error', retryable: true });
    expect(await listFiles(fixture.workspace.outDir)).toEqual([]);
  });

  it('run: the token endpoint answering 503 on every try fails source_server_error too, retryable, exit 1', async () => {
    fixture.sandbox.inject({ endpoint: 'token', kind: 'server-error', status: 503, times: Number.POSITIVE_INFINITY, message: 'issuer restarting' });
    const result = await cli(['run', '--job', 'incident_detail', '--json']);
    expect(result.exitCode, result.stderr).toBe(1);
    const error = summaryOf(result.stdout, 'run').tiles[0]!.error!;
    expect(error).toMatchObject({ code: 'source_server_error', retryable: true });
    expect(error.message).toMatch(/^job incident_detail: token request: the server failed with HTTP 503: .*issuer restarting/);
  });

  it('run: a refusal (HTTP 400, a tile the source does not know) stays export_api_error, not retryable', async () => {
    const result = await cli(['run', '--job', 'wrong_tile', '--json']);
    expect(result.exitCode, result.stderr).toBe(1);
    const tile = summaryOf(result.stdout, 'run').tiles[0]!;
    expect(tile.error).toMatchObject({ code: 'export_api_error', retryable: false });
    expect(tile.error!.message).toContain('failed with HTTP 400: invalid id');
    expect(tile.retries).toBe(0);
  });

  it('backfill: a window whose export answers 500 on every try fails source_server_error, retryable, with the command that re-runs it', async () => {
    const from = dayFromToday(-4);
    const to = dayFromToday(-2);
    fixture.sandbox.inject({ endpoint: 'export', kind: 'server-error', status: 500, times: Number.POSITIVE_INFINITY, message: 'warehouse down' });
    const result = await cli(['backfill', '--job', 'daily_severity', '--from', from, '--to', to, '--json']);
    expect(result.exitCode, result.stderr).toBe(1);
    const summary = summaryOf(result.stdout, 'backfill');
    expect(summary.exitCode).toBe(1);
    expect(summary.windows).toHaveLength(2);
    for (const window of summary.windows) {
      expect(window.summary.error).toEqual({
        code: 'source_server_error',
        message: `job daily_severity: page 0: the server failed with HTTP 500: warehouse down`,
        retryable: true,
      });
    }
    const rerun = `tilehouse backfill --job daily_severity --from ${from} --to ${to} --step day ${flags().join(' ')}`;
    expect(summary.rerun).toEqual([rerun]);
    expect(result.stderr).toContain(
      `  ${from}..${dayFromToday(-3)}: FAILED source_server_error: job daily_severity: page 0: the server failed with HTTP 500: warehouse down\n`,
    );
    expect(result.stderr).toContain(`failed windows: 2; re-run only them with:\n  ${rerun}\n`);

    // The server recovered: the printed command passes, as "retryable" promised.
    fixture.sandbox.clearFaults();
    const again = await runCli(rerun.split(' ').slice(1), { env: sandboxEnv(fixture.sandbox) });
    expect(again.exitCode, again.stderr).toBe(0);
  });
});
