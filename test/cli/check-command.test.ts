import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, sandboxEnv } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxWorkspaceForAll } from '../support/sandbox-fixture.js';

/** Issue 11: `tilehouse check`, the connection test: a token, then page 0 of each tile; writes nothing. */

const fixture = sandboxWorkspaceForAll({ incidents: 130 }, [
  { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
  { name: 'wrong_tile', tile: 'no-such-tile', query: detailQuery, sinks: [{ type: 'csv' }] },
]);

const check = (args: string[], secret?: string) =>
  runCli(['check', '--config', fixture.workspace.configFile, '--jobs', fixture.workspace.jobsDir, ...args], { env: sandboxEnv(fixture.sandbox, secret) });

describe('tilehouse check', () => {
  it('prints ok with the tile size and column count; one token and one page request; writes nothing', async () => {
    const before = fixture.sandbox.requests.length;
    const result = await check(['--tile', 'detail']);
    expect(result).toMatchObject({
      exitCode: 0,
      stdout: `ok job detail: 130 rows in the tile, 4 columns\n  ${fixture.workspace.outDir}/detail.csv guard: passes: 130 rows; no target yet\n`,
      stderr: '',
    });
    const requests = fixture.sandbox.requests.slice(before);
    expect(requests.map((request) => request.endpoint)).toEqual(['token', 'export']);
    expect(await listFiles(fixture.workspace.outDir)).toEqual([]);
  });

  it('checks every job by default and exits 1 when one fails, naming its error code', async () => {
    const result = await check([]);
    expect(result.exitCode).toBe(1);
    expect(result.stdout.split('\n')).toEqual([
      'ok job detail: 130 rows in the tile, 4 columns',
      `  ${fixture.workspace.outDir}/detail.csv guard: passes: 130 rows; no target yet`,
      "FAIL job wrong_tile: export_api_error: page 0: export for tile no-such-tile (sent as query item tileId) failed with HTTP 400: invalid id; check the job's tile and source.tileParam",
      '',
    ]);
  });

  it("leads with the refusal when a publish guard would refuse a run now (a file holding far more rows than the tile), exits 1, and gives the guard's line", async () => {
    await mkdir(fixture.workspace.outDir, { recursive: true });
    const file = path.join(fixture.workspace.outDir, 'detail.csv');
    await writeFile(file, `Number,Created,Description,Severity\r\n${'1,,x,y\r\n'.repeat(1000)}`);
    try {
      const result = await check(['--tile', 'detail']);
      expect(result.exitCode).toBe(1);
      expect(result.stdout.split('\n')[0]).toBe(
        'REFUSED job detail: a run now would publish nothing: the publish guard refuses it at 1 target; 130 rows in the tile, 4 columns',
      );
      expect(result.stdout).toContain(
        `\n  ${file} guard: a run now would be refused (shrink): 130 rows would replace the 1000 rows it holds (the CSV file counted): 87% fewer, more than guard.maxShrink 0.5 allows; guard.maxShrink or --allow-shrink lets it publish`,
      );
      expect(await readFile(file, 'utf8')).toContain('1,,x,y');
    } finally {
      await rm(file);
    }
  });

  it('a wrong secret: exit 1, auth_invalid_client, the secret never printed', async () => {
    const wrong = 'check-wrong-secret-2718';
    const result = await check(['--tile', 'detail'], wrong);
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe(
      'FAIL job detail: auth_invalid_client: token request refused (HTTP 401): invalid_client — unknown client or wrong client secret\n',
    );
    expect(result.stdout + result.stderr + JSON.stringify(result.logs)).not.toContain(wrong);
  });

  it('refuses an unknown job with exit 2 before any request', async () => {
    const before = fixture.sandbox.requests.length;
    const result = await check(['--tile', 'nope']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('--job = "nope": no such job; known: detail, wrong_tile');
    expect(fixture.sandbox.requests.length).toBe(before);
  });
});
