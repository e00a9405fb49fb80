// A partial publish names what it left behind, as a failed run does: a job writing PostgreSQL, then
// a CSV, whose CSV directory turns read-only while PostgreSQL publishes (the test's PostgreSQL proxy
// turns it at the publish's first statement). PostgreSQL holds the run, the CSV's rename and the
// removal of its temp files both fail: exit 3, and the summary and the lines a person reads name
// each temp file still beside the target. The CLI runs as `nobody` when the suite runs as root
// (mode bits do not stop root); as the test's own user otherwise.
import { chmod, readdir, rm } from 'node:fs/promises';
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../support/postgres.js';
import { type PostgresProxy, startPostgresProxy } from '../support/postgres-proxy.js';
import { detailQuery } from '../support/queries.js';
import { describeUnless } from '../support/skip.js';
import { spawnCli } from '../support/spawn-cli.js';
import { makeTempDir } from '../support/temp-dir.js';
import { openToOthers, UNPRIVILEGED } from '../support/unprivileged.js';

const server = postgresOrSkip();

describeUnless(postgresBlocker(server))('a partial publish (PostgreSQL published, the CSV not) names what it left behind', () => {
  const database = usePostgresDatabase(server!);
  let sandbox: Sandbox;
  let root: string;
  let proxy: PostgresProxy;
  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 40 });
    root = await makeTempDir();
    proxy = await startPostgresProxy({ host: server!.host, port: server!.port });
  });
  afterAll(async () => {
    await proxy?.stop();
    await sandbox?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('exit 3; every temp file the CSV could not remove is on a `left behind:` line and in the summary, and is there', async () => {
    const job = { name: 'detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'postgres', table: 'partial_left' }, { type: 'csv' }] };
    const workspace = await writeWorkspace(path.join(root, 'case'), sandbox, [job]);
    const env = await addPostgresSettings(workspace.configFile, server!, database.name, { host: '127.0.0.1', port: proxy.port });
    await openToOthers(workspace.root, root);
    // The run's user may write the CSV directory until PostgreSQL publishes.
    const { mkdir } = await import('node:fs/promises');
    await mkdir(workspace.outDir, { recursive: true });
    await chmod(workspace.outDir, 0o777);
    let turned = false;
    proxy.rule((message) => {
      // The publish's first statement after BEGIN: every sink is prepared, the CSV's temp files written.
      if (!turned && message.type === 'P' && message.body.includes('pg_advisory_xact_lock')) {
        turned = true;
        chmodSync(workspace.outDir, 0o555);
      }
      return 'pass';
    });
    let result: Awaited<ReturnType<typeof spawnCli>>;
    let left: string[];
    try {
      result = await spawnCli(['run', '--json', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
        env: { ...sandboxEnv(sandbox), ...env },
        timeoutMs: 60_000,
        spawn: UNPRIVILEGED,
      });
      left = (await readdir(workspace.outDir)).sort();
    } finally {
      proxy.rule(() => 'pass');
      await chmod(workspace.outDir, 0o755);
    }
    expect(turned, 'the publish reached PostgreSQL').toBe(true);
    expect(result.code, result.stderr).toBe(3);
    // PostgreSQL holds the run.
    expect(Number((await database.query<{ n: string }>('SELECT count(*)::text AS n FROM partial_left'))[0]!.n)).toBe(40);
    // The CSV's target was never published; its temp files stayed, each named.
    expect(left.filter((name) => !name.endsWith('.tmp'))).toEqual([]);
    const temps = left.map((name) => path.join(workspace.outDir, name));
    expect(temps.length).toBeGreaterThan(0);
    const summary = JSON.parse(result.stdout) as { tiles: { status: string; leftBehind?: string[] }[] };
    const tile = summary.tiles[0]!;
    expect(tile.status).toBe('partially_published');
    expect(tile.leftBehind).toEqual(
      temps.map((temp) => expect.stringMatching(new RegExp(`^temp file ${escape(temp)}: still there \\(removing it failed: EACCES`))),
    );
    for (const line of tile.leftBehind ?? []) expect(result.stderr).toContain(`left behind: ${line}`);
  }, 90_000);
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
