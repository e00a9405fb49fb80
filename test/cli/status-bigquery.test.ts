import path from 'node:path';
import { expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { bigQueryRunsForAll } from '../support/bigquery-runs.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv } from '../support/cli-harness.js';
import { detailQueryAbove } from '../support/queries.js';

// `tilehouse status` of a BigQuery target over the emulator: the run that wrote the table, from
// the run ledger's latest published row, with its rows and the definition it recorded; a refused
// run after it leaves the first run named, and both the refusal and status say what changed in the job since.
const INCIDENTS = 120;

describeWithEmulator('tilehouse status of a BigQuery target', (endpoint) => {
  const fixture = bigQueryRunsForAll(endpoint, { incidents: INCIDENTS });

  it('names the run the ledger says published the table, and after a refused run still that one, with what changed since', async () => {
    const dataset = uniqueDatasetId('tilehouse_status');
    const job = (above: number) => ({
      name: 'incidents',
      tile: SANDBOX_TILE,
      schedule: { cron: '0 2 * * *', timezone: 'UTC' },
      query: detailQueryAbove(above),
      columns: { Number: { type: 'INT64' } },
      sinks: [{ type: 'bigquery', writeMode: 'replace' }],
    });
    const dir = path.join(fixture.root, dataset);
    const write = (above: number) =>
      writeBigQueryWorkspace(dir, fixture.sandbox, [job(above)], { projectId: endpoint.projectId, dataset }, { itemsPerPage: 50 });
    let workspace = await write(0);
    expect((await fixture.run(workspace, ['--run-id', 'status-run-1'])).exitCode).toBe(0);
    workspace = await write(INCIDENTS);
    const refused = await fixture.run(workspace, ['--run-id', 'status-run-2']);
    expect(refused.exitCode).toBe(1);
    // The table's guard reads no run from the table itself: the ledger names it once the guard trips.
    // The refusal leads with the edit, its old values from the run history's record of status-run-1.
    expect(refused.stderr).toContain(
      `publish_guard_tripped: the job changed since run status-run-1: filters on Number: [{"operator":"gt","values":["0"]}] → [{"operator":"gt","values":["${INCIDENTS}"]}]; the publish guard refused this export`,
    );
    expect(refused.stderr).toContain('rows (table metadata) (rule empty). If this is meant, run it again with --allow-shrink');
    const status = await runCli(['status', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: fixture.client } },
    });
    const table = `${endpoint.projectId}.${dataset}.incidents`;
    const lines = status.stdout.split('\n');
    // The job's last run (from the run history) first, then the target.
    expect(lines[1]).toMatch(/^ {2}last run: REFUSED publish_guard_tripped, run status-run-2 of /);
    const at = lines.findIndex((line) => line.startsWith('  bigquery '));
    expect(lines[at]).toMatch(
      new RegExp(`^  bigquery ${table.replaceAll('.', '\\.')}: run status-run-1 of \\S+ \\S+ UTC, ${INCIDENTS} rows \\(the run ledger\\)`),
    );
    // What changed is said once, by the block of the run that wrote the table, old → new.
    expect(lines[at + 1]).toBe('  changed since run status-run-1 (old → new):');
    expect(lines[at + 2]).toBe(`    filters on Number: [{"operator":"gt","values":["0"]}] → [{"operator":"gt","values":["${INCIDENTS}"]}]`);
    expect(lines.filter((line) => /^ {4}the job's \w+ changed since run/.test(line))).toEqual([]);
  });

  it('an append: the rows the table holds (its metadata), beside what the last run published (the run ledger)', async () => {
    const dataset = uniqueDatasetId('tilehouse_status_append');
    const job = {
      name: 'appended',
      tile: SANDBOX_TILE,
      query: detailQueryAbove(0),
      columns: { Number: { type: 'INT64' } },
      sinks: [{ type: 'bigquery', writeMode: 'append' }],
    };
    const workspace = await writeBigQueryWorkspace(
      path.join(fixture.root, dataset),
      fixture.sandbox,
      [job],
      { projectId: endpoint.projectId, dataset },
      { itemsPerPage: 50 },
    );
    for (const runId of ['append-run-1', 'append-run-2']) expect((await fixture.run(workspace, ['--run-id', runId])).exitCode).toBe(0);
    const [ledger] = await fixture.client.query({
      query: `SELECT run_id, row_count FROM \`${endpoint.projectId}.${dataset}._tilehouse_runs\` ORDER BY recorded_at`,
    });
    const status = await runCli(['status', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: fixture.client } },
    });
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    const second = (ledger as Array<{ run_id: string; row_count: number }>).find((row) => row.run_id === 'append-run-2')!;
    const [held] = await fixture.client.query({ query: `SELECT COUNT(*) AS n FROM \`${endpoint.projectId}.${dataset}.appended\`` });
    expect(Number((held as Array<{ n: number }>)[0]!.n)).toBe(2 * INCIDENTS);
    expect(Number(second.row_count)).toBe(INCIDENTS);
    expect(status.stdout.split('\n').filter((line) => line.startsWith('  bigquery '))).toEqual([
      `  bigquery ${endpoint.projectId}.${dataset}.appended: run append-run-2 of ${status.stdout.match(/run append-run-2 of (\S+ \S+ UTC)/)![1]}, ${2 * INCIDENTS} rows (table metadata; the run ledger: that run published ${INCIDENTS} rows)`,
    ]);
  });
});
