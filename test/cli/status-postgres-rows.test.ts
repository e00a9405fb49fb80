// `status` of a PostgreSQL table: the rows it says the table holds are the rows it holds. The run
// ledger's `rows` is what a run moved (merged, appended, a window's days): only a replace's equals
// the table's.
import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { addPostgresSettings, postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../support/postgres.js';
import { detailQuery } from '../support/queries.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { describeUnless } from '../support/skip.js';

const server = postgresOrSkip();
const NOW = '2026-12-07T08:00:00.000Z';

describeUnless(postgresBlocker(server))('status of a PostgreSQL table says the rows it holds', () => {
  const fixture = sandboxAndRootForAll({ incidents: 120 });
  const database = usePostgresDatabase(server!);

  async function twoRuns(name: string, sink: Record<string, unknown>) {
    const ws = await writeWorkspace(path.join(fixture.root, name), fixture.sandbox, [
      { name, tile: SANDBOX_TILE, query: detailQuery, columns: { Number: { type: 'INT64' } }, sinks: [sink] },
    ]);
    const env = { ...sandboxEnv(fixture.sandbox), ...(await addPostgresSettings(ws.configFile, server!, database.name)) };
    const cli = (args: string[]) => runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir], { env, seams: { now: () => new Date(NOW) } });
    for (const runId of [`${name}-1`, `${name}-2`]) {
      const run = await cli(['run', '--run-id', runId]);
      expect(run.exitCode, run.stderr).toBe(0);
    }
    const status = await cli(['status']);
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    const held = await database.query<{ rows: string }>(`SELECT count(*)::text AS rows FROM public.${name}`);
    const ledger = await database.query<{ run_id: string; rows: string }>(
      `SELECT run_id, rows::text AS rows FROM public._tilehouse_runs WHERE target_table = $1 ORDER BY published_at`,
      [`public.${name}`],
    );
    return { lines: status.stdout.split('\n'), held: Number(held[0]!.rows), ledger };
  }

  it('a merge whose rows were all there: the 120 rows the table holds, and that the run merged none', async () => {
    const { lines, held, ledger } = await twoRuns('merged', { type: 'postgres', table: 'merged', writeMode: 'merge', primaryKey: ['Number'] });
    expect(held).toBe(120);
    expect(ledger).toEqual([
      { run_id: 'merged-1', rows: '120' },
      { run_id: 'merged-2', rows: '0' },
    ]);
    expect(lines.filter((line) => line.startsWith('  postgres '))).toEqual([
      '  postgres public.merged: run merged-2 of 2026-12-07 08:00:00 UTC, 120 rows (rows counted; the run ledger: that run merged 0 changed rows)',
    ]);
  });

  it('an append: the 240 rows of both runs, and that the last appended 120', async () => {
    const { lines, held } = await twoRuns('appended', { type: 'postgres', table: 'appended', writeMode: 'append' });
    expect(held).toBe(240);
    expect(lines.filter((line) => line.startsWith('  postgres '))).toEqual([
      '  postgres public.appended: run appended-2 of 2026-12-07 08:00:00 UTC, 240 rows (rows counted; the run ledger: that run appended 120 rows)',
    ]);
  });

  it('a replace: the ledger row is what the table holds, read from it alone', async () => {
    const { lines, held } = await twoRuns('replaced', { type: 'postgres', table: 'replaced' });
    expect(held).toBe(120);
    expect(lines.filter((line) => line.startsWith('  postgres '))).toEqual([
      '  postgres public.replaced: run replaced-2 of 2026-12-07 08:00:00 UTC, 120 rows (the run ledger)',
    ]);
  });
});
