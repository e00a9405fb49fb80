// validate, check and plan of a job with a postgres sink: offline checks, then the real server.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { refusalCode, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { addPostgresSettings, postgresOrSkip, psql, TEST_PASSWORD_VARIABLE, usePostgresDatabase, postgresBlocker } from '../support/postgres.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();

describeUnless(postgresBlocker(server))('validate, check and plan with a postgres sink', () => {
  const fixture = sandboxAndRootForAll({ incidents: 120 });
  const database = usePostgresDatabase(server!);

  async function workspace(name: string, sink: Record<string, unknown>, settings: Record<string, unknown> = {}) {
    const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [
      { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [sink] },
    ]);
    const env = await addPostgresSettings(ws.configFile, server!, database.name, settings);
    return { ws, env: { ...sandboxEnv(fixture.sandbox), ...env } };
  }

  it('validate reports an unset password variable as not checked, and refuses a table name over 63 bytes naming file, field and value', async () => {
    const { ws } = await workspace('validate', { type: 'postgres' }, { password: '${PG_PASSWORD_NOT_HERE}' });
    const unset = await runCli(['validate', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect(unset.exitCode, unset.stderr).toBe(0);
    expect(unset.stderr).toMatch(
      /not checked: .*env\.yaml:\d+: sinks\.postgres\.password = "\$\{PG_PASSWORD_NOT_HERE\}": environment variable PG_PASSWORD_NOT_HERE is not set here/,
    );

    const jobFile = path.join(ws.jobsDir, 'detail.yaml');
    const job = parse(await readFile(jobFile, 'utf8')) as { sinks: Array<Record<string, unknown>> };
    job.sinks[0]!.table = 't'.repeat(64);
    await writeFile(jobFile, stringify(job));
    const long = await runCli(['validate', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect(long.exitCode).toBe(2);
    expect(refusalCode(long)).toBe('config_invalid');
    expect(long.stderr).toContain(`detail.yaml:`);
    expect(long.stderr).toContain(`sinks[0].table = "${'t'.repeat(64)}": is 64 bytes long; PostgreSQL keeps only 63 bytes`);
  });

  it("check says the server's version and that the user may run the job", async () => {
    const { ws, env } = await workspace('check', { type: 'postgres', table: 'checked' });
    const result = await runCli(['check', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout + result.stderr).toMatch(
      /postgres 127\.0\.0\.1:\d+\/tilehouse_test_\w+ public\.checked: PostgreSQL 15\.\d+.*; table absent; a run creates it; user tilehouse has the privileges a replace needs/,
    );
  });

  it('plan shows the table a run would create, then nothing to change, then a column the contract refuses', async () => {
    const { ws, env } = await workspace('plan', { type: 'postgres', table: 'planned' });
    const first = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/public\.planned[\s\S]*create[\s\S]*\+ number /);
    expect((await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env })).exitCode).toBe(0);
    const unchanged = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    expect(unchanged.stdout).toMatch(/public\.planned[\s\S]*unchanged/);
    await psql(server!, database.name, "ALTER TABLE planned ADD COLUMN owner text NOT NULL DEFAULT 'x'");
    const refused = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env });
    expect(refused.stdout).toMatch(/public\.planned[\s\S]*refuse[\s\S]*column owner \(NOT NULL\) is not in the tile/);
    expect(process.env[TEST_PASSWORD_VARIABLE]).toBe(server!.password);
  });
});
