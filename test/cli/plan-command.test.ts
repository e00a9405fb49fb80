import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';

const query = {
  items: [
    { header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', filters: [] },
  ],
  options: {},
};
const job = { name: 'by_type', tile: SANDBOX_TILE, query, sinks: [{ type: 'csv' }], columns: { Incidents: { type: 'INT64' } } };
const widerQuery = {
  ...query,
  items: [...query.items, { header: 'Newest', formula: '[incident.created]', dataType: 'datetime', aggregate: 'max', filters: [] }],
};

const fixture = sandboxAndRootForAll({ incidents: 300 });

describe('tilehouse plan with a CSV sink', () => {
  it('shows the columns, says the file would be created, and writes nothing', async () => {
    const ws = await writeWorkspace(`${fixture.root}/fresh`, fixture.sandbox, [job]);
    const before = fixture.sandbox.requests.length;
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/by_type \(tile sandbox-tile\): \d+ rows now/);
    expect(result.stdout).toMatch(/type\s+STRING\s+"Type" \(text\)/);
    expect(result.stdout).toMatch(/incidents\s+INT64\s+"Incidents" \(number\)/);
    expect(result.stdout).toMatch(/csv .*by_type\.csv: create/);
    expect(fixture.sandbox.requests.slice(before).map((r) => r.endpoint)).toEqual(['token', 'export']);
    expect(await listFiles(ws.outDir)).toEqual([]);
  });

  it('compares with the header of the existing file', async () => {
    const ws = await writeWorkspace(`${fixture.root}/existing`, fixture.sandbox, [job]);
    expect((await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) })).exitCode).toBe(0);
    const same = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect(same.stdout).toMatch(/by_type\.csv: unchanged/);
    // The publish guard's verdict against the file as it is: the same rows pass.
    expect(same.stdout).toMatch(/\n {4}guard: passes: (\d+) rows?; holds \1 rows? \(the CSV file counted\)\n/);

    const wider = await writeWorkspace(`${fixture.root}/existing`, fixture.sandbox, [{ ...job, query: widerQuery }]);
    const changed = await runCli(['plan', '--config', wider.configFile, '--jobs', wider.jobsDir, '--json'], { env: sandboxEnv(fixture.sandbox) });
    expect(changed.exitCode).toBe(0);
    const [plan] = JSON.parse(changed.stdout) as Array<{ sinks: Array<{ action: string; details: string[] }> }>;
    expect(plan!.sinks[0]).toMatchObject({ action: 'change', details: ['+ Newest'], guard: { verdict: 'pass' } });
  });

  it('exits 1 naming the failure when the tile cannot be planned', async () => {
    const ws = await writeWorkspace(`${fixture.root}/unknown`, fixture.sandbox, [{ ...job, tile: 'no-such-tile' }]);
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox) });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/FAILED export_api_error: .*invalid id/);
  });
});

describeWithEmulator('tilehouse plan with a BigQuery sink', (endpoint) => {
  // The run in the middle publishes with a copy job, which the emulator lacks: the proxy adds it.
  let proxy: EmulatorWithCopyJobs;
  beforeAll(async () => {
    proxy = await startEmulatorWithCopyJobs(endpoint);
  });
  afterAll(async () => {
    await proxy.close();
  });

  it('shows the table would be created, then unchanged, then refused under a frozen schema', async () => {
    const client = proxy.client();
    const dataset = uniqueDatasetId('plan');
    const bqJob = { ...job, sinks: [{ type: 'bigquery', table: 'by_type' }] };
    const write = (jobs: Array<Record<string, unknown>>) =>
      writeBigQueryWorkspace(`${fixture.root}/bq`, fixture.sandbox, jobs, { projectId: endpoint.projectId, dataset });
    const seams = { sinkOptions: { bigqueryClient: client } };

    let ws = await write([bqJob]);
    const fresh = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox), seams });
    expect(fresh.stdout).toMatch(new RegExp(`bigquery ${endpoint.projectId}\\.${dataset}\\.by_type: create\\n\\s+\\+ type STRING\\n\\s+\\+ incidents INT64`));
    expect(fresh.exitCode).toBe(0);

    expect((await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox), seams })).exitCode).toBe(0);
    const same = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox), seams });
    expect(same.stdout).toMatch(/by_type: unchanged/);

    ws = await write([{ ...bqJob, query: widerQuery }]);
    const refused = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(fixture.sandbox), seams });
    expect(refused.stdout).toMatch(/by_type: refuse\n\s+added: newest \(TIMESTAMP\)/);
    expect(refused.exitCode).toBe(1);
  });
  it('shows writeMode merge and its key on the sink line, and one MERGE statement per run', async () => {
    const dataset = uniqueDatasetId('plan_merge');
    const mergeJob = { ...job, sinks: [{ type: 'bigquery', table: 'by_type', writeMode: 'merge', primaryKey: ['Type'], latestBy: 'Incidents' }] };
    const ws = await writeBigQueryWorkspace(`${fixture.root}/bq-merge`, fixture.sandbox, [mergeJob], { projectId: endpoint.projectId, dataset });
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: proxy.client() } },
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(`bigquery ${endpoint.projectId}.${dataset}.by_type (merge on type, latest by incidents): create\n`);
    expect(result.stdout).toMatch(/\+ _run_id STRING\n\s+\+ _extracted_at TIMESTAMP/);
    expect(result.stdout).toContain(
      'table operations: each run (or backfill window) sends 1 MERGE statement onto the table, plus 1 load into its own staging table',
    );
  });
});

describeWithEmulator('tilehouse plan with BigQuery partitioning, clustering and a schedule', (endpoint) => {
  const dayQuery = {
    items: [
      { header: 'Day', formula: '[incident.created]', dataType: 'datetime', function: 'date', grouped: true, order: 'asc', orderSequence: 0, filters: [] },
      ...query.items,
    ],
    options: {},
  };
  const partitionedJob = {
    name: 'by_day',
    tile: SANDBOX_TILE,
    query: dayQuery,
    columns: { Incidents: { type: 'INT64' }, Day: { type: 'DATE' } },
    schedule: { cron: '* * * * *' },
    sinks: [
      { type: 'bigquery', table: 'by_day', partitionBy: { column: 'Day' }, clusterBy: ['Type'], requirePartitionFilter: true, partitionExpirationDays: 90 },
    ],
  };

  it('shows the partitioning, clustering and options, and warns when the schedule nears the daily table operations', async () => {
    const dataset = uniqueDatasetId('plan_layout');
    const ws = await writeBigQueryWorkspace(`${fixture.root}/bq-layout`, fixture.sandbox, [partitionedJob], { projectId: endpoint.projectId, dataset });
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: localBigQueryClient(endpoint) } },
    });

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(`bigquery ${endpoint.projectId}.${dataset}.by_day: create`);
    expect(result.stdout).toMatch(
      /\n\s+partitioned by day on day \(DATE\)\n\s+clustered by type\n\s+requirePartitionFilter: true\n\s+partitions expire after 90 days\n/,
    );
    expect(result.stdout).toMatch(/table operations: each run \(or backfill window\) sends 1 copy per partition its rows fall in/);
    expect(result.stdout).toContain('table operations/day: 1,440 scheduled runs x (partitions per run, at least 1) = >= 1,440 of 1,500 (96 %)');
    expect(result.stdout).toMatch(/warning: near BigQuery's 1,500 table operations per table per day/);
  });

  it('refuses a partition column of the wrong type and a FLOAT64 cluster column, naming the field and value (exit 1)', async () => {
    const dataset = uniqueDatasetId('plan_layout');
    const badPartition = { ...partitionedJob, name: 'bad_partition', sinks: [{ type: 'bigquery', partitionBy: { column: 'Type' } }] };
    const badCluster = { ...partitionedJob, name: 'bad_cluster', columns: { Day: { type: 'DATE' } }, sinks: [{ type: 'bigquery', clusterBy: ['Incidents'] }] };
    const ws = await writeBigQueryWorkspace(`${fixture.root}/bq-layout-bad`, fixture.sandbox, [badPartition, badCluster], {
      projectId: endpoint.projectId,
      dataset,
    });
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: localBigQueryClient(endpoint) } },
    });

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(
      /bad_partition: refuse\n\s+bigquery_partition_column_invalid: job bad_partition: sink bigquery \S+\.bad_partition: partitionBy\.column = "Type": column type is STRING/,
    );
    expect(result.stdout).toMatch(
      /bad_cluster: refuse\n\s+bigquery_cluster_column_invalid: job bad_cluster: sink bigquery \S+\.bad_cluster: clusterBy\[0\] = "Incidents": column incidents is FLOAT64/,
    );
  });

  it('shows the options a run would change on an existing table, and refuses one partitioned otherwise', async () => {
    const client = localBigQueryClient(endpoint);
    const dataset = uniqueDatasetId('plan_layout');
    await client.createDataset(dataset);
    const fields = [
      { name: 'day', type: 'DATE' },
      { name: 'type', type: 'STRING' },
      { name: 'incidents', type: 'INT64' },
    ];
    await client
      .dataset(dataset)
      .createTable('by_day', { schema: { fields }, timePartitioning: { type: 'DAY', field: 'day' }, clustering: { fields: ['incidents'] } });
    await client.dataset(dataset).createTable('by_month', { schema: { fields }, timePartitioning: { type: 'MONTH', field: 'day' } });
    const monthJob = { ...partitionedJob, name: 'by_month', sinks: [{ type: 'bigquery', table: 'by_month', partitionBy: { column: 'Day' } }] };
    const ws = await writeBigQueryWorkspace(`${fixture.root}/bq-layout-existing`, fixture.sandbox, [partitionedJob, monthJob], {
      projectId: endpoint.projectId,
      dataset,
    });
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], {
      env: sandboxEnv(fixture.sandbox),
      seams: { sinkOptions: { bigqueryClient: client } },
    });

    expect(result.stdout).toMatch(
      /by_day: change\n\s+~ clustering incidents -> type\n\s+~ requirePartitionFilter false -> true\n\s+~ partition expiration none -> 90 days\n/,
    );
    expect(result.stdout).toMatch(/by_month: refuse\n\s+bigquery_table_layout_mismatch: .*is MONTH on day, the job asks for DAY on day/);
    expect(result.exitCode).toBe(1);
  });
});
