// tilehouse run into an Iceberg table (JDBC catalog on the suite's PostgreSQL) whose local
// location stops taking files: the table's data folder made read-only between two nights, the CLI
// run as an ordinary user (`nobody` when the tests run as root: root writes anywhere). The second
// night fails with the path named, commits nothing (both readers read the first night), and
// leaves no file of its own behind.
import { chmod, mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { exitWithin, spawnCli } from '../../support/child-process.js';
import { sandboxEnv } from '../../support/cli-harness.js';
import { icebergPythonOrSkip, type PyicebergTable } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, TEST_PASSWORD_VARIABLE, usePostgresDatabase } from '../../support/postgres.js';
import { sandboxAndRootForAll } from '../../support/sandbox-fixture.js';
import { describeUnless, missing } from '../../support/skip.js';
import { openToOthers, UNPRIVILEGED } from '../../support/unprivileged.js';
import { faultJob, icebergWorkspace, tableState } from './iceberg-cli-support.js';

const python = icebergPythonOrSkip();
const server = postgresOrSkip();

/** Every file below `dir`, relative, sorted. */
async function filesBelow(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

describeUnless(missing('the Iceberg readers', python) ?? postgresBlocker(server))('tilehouse run into an Iceberg table whose location refuses files', () => {
  const fixture = sandboxAndRootForAll({ incidents: 30 });
  const database = usePostgresDatabase(server!);

  it('fails naming the path, commits nothing (pyiceberg and DuckDB read the previous night), and leaves no file', async () => {
    const table = 'store_faults.incidents';
    const job = 'store_faults';
    const caseDir = path.join(fixture.root, 'unwritable');
    const location = path.join(caseDir, 'warehouse');
    const definition = { ...faultJob(job, table, 'replace'), sinks: [{ type: 'iceberg', table, writeMode: 'replace' }] };
    const ws = await icebergWorkspace(caseDir, fixture.sandbox, [definition], {
      catalog: {
        type: 'jdbc',
        catalogName: 'tilehouse_store_faults',
        host: server!.host,
        port: server!.port,
        database: database.name,
        user: server!.user,
        password: `\${${TEST_PASSWORD_VARIABLE}}`,
        sslmode: 'disable',
      },
      location,
    });
    await mkdir(location, { recursive: true });
    await openToOthers(ws.jobsDir, fixture.root);
    // The warehouse takes the unprivileged user's files (the test's own folder, never the temp root).
    await chmod(location, 0o777);
    const env = { ...process.env, ...sandboxEnv(fixture.sandbox), [TEST_PASSWORD_VARIABLE]: server!.password };
    const run = async (runId: string) => {
      const child = spawnCli(['run', '--run-id', runId, '--config', ws.configFile, '--jobs', ws.jobsDir], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        ...UNPRIVILEGED,
      });
      const out: Buffer[] = [];
      child.stdout!.on('data', (chunk: Buffer) => out.push(chunk));
      child.stderr!.on('data', (chunk: Buffer) => out.push(chunk));
      const exit = await exitWithin(child, 120_000);
      return { exitCode: exit.code, output: Buffer.concat(out).toString('utf8') };
    };
    const reader: PyicebergTable = {
      catalog: {
        type: 'sql',
        uri: `postgresql+psycopg2://${encodeURIComponent(server!.user)}:${encodeURIComponent(server!.password)}@${server!.host}:${server!.port}/${database.name}`,
      },
      catalogName: 'tilehouse_store_faults',
      table,
    };

    const first = await run('night-1');
    expect(first.exitCode, first.output).toBe(0);
    const before = await tableState(python!, reader);
    expect(before.runIds).toEqual(['night-1']);
    expect(before.rows).toHaveLength(30);
    const tableDir = path.join(location, 'store_faults', 'incidents');
    const filesBefore = await filesBelow(tableDir);

    const dataDir = path.join(tableDir, 'data');
    await chmod(dataDir, 0o555);
    try {
      const second = await run('night-2');
      expect(second.exitCode, second.output).toBe(1);
      expect(second.output).toContain('permission_denied');
      expect(second.output).toContain(dataDir);
    } finally {
      await chmod(dataDir, 0o755);
    }
    const after = await tableState(python!, reader);
    expect(after.runIds, 'nothing committed').toEqual(['night-1']);
    expect(after.rows).toEqual(before.rows);
    expect(after.metadataLocation).toBe(before.metadataLocation);
    expect(await filesBelow(tableDir), 'no file of the failed run left').toEqual(filesBefore);
  }, 300_000);
});
