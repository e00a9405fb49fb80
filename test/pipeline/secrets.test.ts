import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { listFiles, runCli, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const SECRET = 'S3cr3t-client-secret-4711';

const fixture = sandboxAndRootForAll({ incidents: 120, clientSecret: SECRET });

describe('credentials in a run', () => {
  it('never appear in stdout, stderr, logs at trace level or any output file, even with a 401 re-auth and a retry', async () => {
    const workspace = await writeWorkspace(
      fixture.root,
      fixture.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }],
      {
        itemsPerPage: 20,
      },
    );
    fixture.sandbox.inject({ kind: 'token-expiry', afterExportCalls: 2 });
    fixture.sandbox.inject({ endpoint: 'export', pageNumber: 3, kind: 'server-error', status: 503 });
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--log-level', 'trace'], {
      env: { TEST_CLIENT_ID: fixture.sandbox.clientId, TEST_CLIENT_SECRET: SECRET },
    });
    expect(result.exitCode).toBe(0);
    expect(fixture.sandbox.issuedTokens.length).toBe(2);
    expect(result.logs.some((line) => line.level === 10 || line.level === 20)).toBe(true);

    const outputs = await Promise.all((await listFiles(workspace.outDir)).map((file) => readFile(path.join(workspace.outDir, file), 'utf8')));
    const everything = [result.stdout, result.stderr, JSON.stringify(result.logs), ...outputs].join('\n');
    for (const secret of [SECRET, ...fixture.sandbox.issuedTokens]) expect(everything).not.toContain(secret);
  });

  it('are not echoed when the issuer refuses them', async () => {
    const workspace = await writeWorkspace(fixture.root, fixture.sandbox, [
      { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] },
    ]);
    const wrong = 'wrong-secret-0815';
    const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, '--log-level', 'trace'], {
      env: { TEST_CLIENT_ID: fixture.sandbox.clientId, TEST_CLIENT_SECRET: wrong },
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('invalid_client');
    expect([result.stdout, result.stderr, JSON.stringify(result.logs)].join('\n')).not.toContain(wrong);
  });
});
