// Tables under policy (issue 38), end to end: `tilehouse backfill` and incremental `tilehouse run`
// against the sandbox, into the emulator behind the copy proxy and, in front of both, the
// partition-filter proxy (test/support/bigquery-partition-filter-proxy.ts). The emulator stores a
// table's requirePartitionFilter and partition expiration but enforces neither: the proxy refuses
// every query of a require-partition-filter table that lacks a filter on its partition column, as
// BigQuery does, and the expiration test counts what BigQuery would keep (see there).
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../sandbox/index.js';
import { firstKeptDay } from '../../src/sinks/bigquery/partition-range.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { startPartitionFilterProxy, type PartitionFilterProxy } from '../support/bigquery-partition-filter-proxy.js';
import { readTable } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { runCli, sandboxEnv, refusalCode, summaryOf } from '../support/cli-harness.js';
import { incidentDaysQuery } from '../support/queries.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

const DAY = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

function job(table: string, sink: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    name: table,
    tile: SANDBOX_TILE,
    query: incidentDaysQuery,
    columns: { Number: { type: 'INT64' }, Day: { type: 'DATE' } },
    sinks: [{ type: 'bigquery', table, ...sink }],
    backfill: { item: 'day', bucketColumn: 'Day' },
    ...extra,
  };
}

describeWithEmulator('backfill and incremental runs onto tables under policy', (endpoint) => {
  let copies: EmulatorWithCopyJobs;
  let policy: PartitionFilterProxy;
  let client: BigQuery;
  let direct: BigQuery;
  const temp = tempDirForAll();
  const each = sandboxesEachTest();
  const dataset = uniqueDatasetId('policy_cli');

  beforeAll(async () => {
    copies = await startEmulatorWithCopyJobs(endpoint);
    direct = copies.client();
    policy = await startPartitionFilterProxy(copies.endpoint.apiEndpoint);
    client = localBigQueryClient({ apiEndpoint: policy.apiEndpoint, projectId: endpoint.projectId });
    await direct.createDataset(dataset, { location: 'US' });
  });
  afterAll(async () => {
    await policy?.close();
    await copies?.close();
  });

  const sandboxAt = (now: Date) => each.sandbox({ incidents: 1500, now });
  const name = (table: string) => `${endpoint.projectId}.${dataset}.${table}`;

  async function cli(sandbox: Sandbox, dir: string, jobs: Array<Record<string, unknown>>, args: string[]) {
    const ws = await writeBigQueryWorkspace(path.join(temp.path, dir), sandbox, jobs, { projectId: endpoint.projectId, dataset });
    return runCli([...args, '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], {
      env: sandboxEnv(sandbox),
      seams: { sinkOptions: { bigqueryClient: client } },
    });
  }

  /** number -> "day|severity" of the incidents created in [from, to), as the source has them. */
  function sourceRows(sandbox: Sandbox, from: string, to: string): Map<number, string> {
    const all = sandbox.evaluate({ ...incidentDaysQuery, items: incidentDaysQuery.items.map((item) => ({ ...item, filters: [] })) }, SANDBOX_TILE);
    return new Map(
      all.rows
        .filter((row) => (row[1] as string) >= from && (row[1] as string) < to)
        .map(([number, day, severity]) => [number as number, `${day as string}|${severity as string}`]),
    );
  }
  async function tableRows(table: string): Promise<Map<number, string>> {
    const rows = await readTable(direct, { projectId: endpoint.projectId, dataset, table }, 'number');
    expect(new Set(rows.map((row) => Number(row.number))).size).toBe(rows.length);
    return new Map(rows.map((row) => [Number(row.number), `${String(row.day)}|${String(row.severity)}`]));
  }
  async function handMadeTable(table: string, options: { expirationMs?: string } = {}): Promise<void> {
    await direct.dataset(dataset).createTable(table, {
      // With merge's lineage columns: the emulator's SQL does not see columns `schema: add` patches on.
      schema: {
        fields: [
          { name: 'number', type: 'INT64' },
          { name: 'day', type: 'DATE' },
          { name: 'severity', type: 'STRING' },
          { name: '_run_id', type: 'STRING' },
          { name: '_extracted_at', type: 'TIMESTAMP' },
        ],
      },
      timePartitioning: { type: 'DAY', field: 'day', ...(options.expirationMs ? { expirationMs: options.expirationMs } : {}) },
      requirePartitionFilter: true,
    });
  }
  const refusalsOf = (table: string) => policy.refusals.filter((refusal) => refusal.table === name(table));

  it('a merge backfill onto a require-partition-filter table tilehouse creates, and onto one made by hand before the first run: exact, nothing refused', async () => {
    const sandbox = await sandboxAt(new Date('2026-07-10T12:00:00Z'));
    const expected = sourceRows(sandbox, '2026-07-01', '2026-07-05');
    expect(expected.size).toBeGreaterThan(0);
    const merged = { writeMode: 'merge', primaryKey: ['Number'], partitionBy: { column: 'Day', granularity: 'day' } };

    const created = await cli(
      sandbox,
      'created',
      [job('merged_days', { ...merged, requirePartitionFilter: true })],
      ['backfill', '--job', 'merged_days', '--from', '2026-07-01', '--to', '2026-07-05'],
    );
    expect(created.exitCode, created.stderr).toBe(0);
    // Again over the same windows (new run id): the MERGEs match what the first wrote.
    const again = await cli(
      sandbox,
      'created-again',
      [job('merged_days', { ...merged, requirePartitionFilter: true })],
      ['backfill', '--job', 'merged_days', '--from', '2026-07-01', '--to', '2026-07-05'],
    );
    expect(again.exitCode, again.stderr).toBe(0);
    expect(await tableRows('merged_days')).toEqual(expected);
    expect(refusalsOf('merged_days')).toEqual([]);
    expect(policy.queries.filter((query) => query.startsWith(`MERGE \`${name('merged_days')}\``)).at(-1)).toContain(
      "(T.`day` IS NULL OR T.`day` >= DATE '0001-01-01')",
    );

    await handMadeTable('hand_days');
    const hand = await cli(sandbox, 'hand', [job('hand_days', merged)], ['backfill', '--job', 'hand_days', '--from', '2026-07-01', '--to', '2026-07-05']);
    expect(hand.exitCode, hand.stderr).toBe(0);
    expect(await tableRows('hand_days')).toEqual(expected);
    expect(refusalsOf('hand_days')).toEqual([]);
  }, 120_000);

  it('incremental merge runs onto a require-partition-filter table: exact, and the ledger finds what they published', async () => {
    const incremental = (table: string) =>
      job(
        table,
        { writeMode: 'merge', primaryKey: ['Number'], partitionBy: { column: 'Day', granularity: 'day' }, requirePartitionFilter: true },
        { incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0 }, backfill: undefined },
      );
    // One source clock for both runs: the sandbox re-dates its incidents when its clock moves, which
    // would move keys between partitions, and a MERGE bounded by the run's partitions does not
    // follow a key out of its partition (docs/bigquery.md: partition by a date the key determines).
    const day5 = await sandboxAt(new Date('2026-07-05T12:00:00Z'));
    const first = await cli(day5, 'incremental-1', [incremental('incremental_days')], ['run']);
    expect(first.exitCode, first.stderr).toBe(0);
    const expected = sourceRows(day5, '2026-07-01', '2026-07-06');
    expect(await tableRows('incremental_days')).toEqual(expected);
    const second = await cli(day5, 'incremental-2', [incremental('incremental_days')], ['run']);
    expect(second.exitCode, second.stderr).toBe(0);
    const summary = summaryOf(second.stdout, 'run');
    // The ledger (read past the policy) says days 1-4 are published and closed: only the open day again.
    expect(summary.incremental![0]!.windows.map((window) => window.from)).toEqual(['2026-07-05']);
    expect(await tableRows('incremental_days')).toEqual(expected);
    expect(refusalsOf('incremental_days')).toEqual([]);
  }, 120_000);

  it('a backfill of 60 days into a table whose partitions expire after 30: the summary and the ledger count what the table keeps; an all-expired backfill, and the partial one under --strict, are refused before the first page', async () => {
    const now = Date.now();
    const sandbox = await sandboxAt(new Date(now));
    const expirationMs = 30 * DAY;
    await handMadeTable('expiring', { expirationMs: String(expirationMs) });
    const to = isoDay(now + DAY);
    const from = isoDay(now - 59 * DAY);
    const sink = { writeMode: 'merge', primaryKey: ['Number'], partitionBy: { column: 'Day', granularity: 'day' } };

    // Refused: every window beyond the expiration, and the partial one under --strict. No page read.
    const exports = () => sandbox.requests.filter((request) => request.endpoint === 'export').length;
    const allExpired = await cli(
      sandbox,
      'all-expired',
      [job('expiring', sink)],
      ['backfill', '--job', 'expiring', '--from', from, '--to', isoDay(now - 40 * DAY)],
    );
    expect(allExpired.exitCode).toBe(2);
    expect(refusalCode(allExpired)).toBe('bigquery_windows_expired');
    expect(allExpired.stderr).toContain('bigquery_windows_expired');
    expect(allExpired.stderr).toContain(`all 19 windows of this backfill`);
    expect(allExpired.stderr).toContain(`timePartitioning.expirationMs = ${expirationMs}, 30 days`);
    const strict = await cli(
      sandbox,
      'strict',
      [job('expiring', sink)],
      ['backfill', '--job', 'expiring', '--from', from, '--to', to, '--step', 'week', '--strict'],
    );
    expect(strict.exitCode).toBe(2);
    expect(refusalCode(strict)).toBe('bigquery_windows_expired');
    expect(strict.stderr).toContain('--strict refuses any');
    expect(exports()).toBe(0);

    const result = await cli(sandbox, 'sixty-days', [job('expiring', sink)], ['backfill', '--job', 'expiring', '--from', from, '--to', to, '--step', 'week']);
    expect(result.exitCode, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'backfill');
    const outputs = summary.windows.flatMap((window) => window.summary.outputs);
    const kept = outputs.reduce((sum, output) => sum + output.rows, 0);
    const expired = outputs.reduce((sum, output) => sum + (output.expiredRows ?? 0), 0);
    const warnings = summary.windows.flatMap((window) => window.warnings ?? []);

    // The emulator does not drop expired partitions (checked here: their rows are still there), so
    // what BigQuery would keep is counted as the rows from the first day not yet expired.
    const keptFrom = firstKeptDay(expirationMs, Date.now());
    const all = await tableRows('expiring');
    const held = [...all.values()].filter((values) => values.slice(0, 10) >= keptFrom).length;
    const dropped = all.size - held;
    expect(dropped).toBeGreaterThan(0);
    expect(held).toBeGreaterThan(0);
    expect(all).toEqual(sourceRows(sandbox, from, to));
    expect(kept).toBe(held);
    expect(expired).toBe(dropped);
    expect(warnings.some((warning) => warning.includes("older than the table's partition expiration") && warning.includes('30 days'))).toBe(true);

    const [ledger] = await direct.query({
      query: `SELECT SUM(row_count) AS n, SUM(IFNULL(expired_rows, 0)) AS expired FROM \`${name('_tilehouse_runs')}\` WHERE job = 'expiring' AND run_id LIKE '${summary.runId}-%'`,
    });
    expect((ledger as Array<{ n: number; expired: number }>).map((row) => [Number(row.n), Number(row.expired)])).toEqual([[held, dropped]]);
    expect(refusalsOf('expiring')).toEqual([]);
  }, 180_000);
});
