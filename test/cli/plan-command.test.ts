import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../sandbox/index.js';
import { describeWithEmulator, localBigQueryClient, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { makeTempDir } from '../support/temp-dir.js';

const query = {
  items: [
    { header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, order: 'asc', orderSequence: 0, filters: [] },
    { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', filters: [] },
  ],
  options: {},
};
const job = { name: 'by_type', tile: SANDBOX_TILE, query, sinks: [{ type: 'csv' }], columns: { Incidents: { type: 'INT64' } } };
const widerQuery = { ...query, items: [...query.items, { header: 'Newest', formula: '[incident.created]', dataType: 'datetime', aggregate: 'max', filters: [] }] };

let sandbox: Sandbox;
let root: string;

beforeAll(async () => {
  sandbox = await startSandbox({ incidents: 300 });
  root = await makeTempDir();
});
afterAll(async () => {
  await sandbox.close();
  await rm(root, { recursive: true, force: true });
});

describe('tilehouse plan with a CSV sink', () => {
  it('shows the columns, says the file would be created, and writes nothing', async () => {
    const ws = await writeWorkspace(`${root}/fresh`, sandbox, [job]);
    const before = sandbox.requests.length;
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox) });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/by_type \(tile sandbox-tile\): \d+ rows now/);
    expect(result.stdout).toMatch(/type\s+STRING\s+"Type" \(text\)/);
    expect(result.stdout).toMatch(/incidents\s+INT64\s+"Incidents" \(number\)/);
    expect(result.stdout).toMatch(/csv .*by_type\.csv: create/);
    expect(sandbox.requests.slice(before).map((r) => r.endpoint)).toEqual(['token', 'export']);
    expect(await listFiles(ws.outDir)).toEqual([]);
  });

  it('compares with the header of the existing file', async () => {
    const ws = await writeWorkspace(`${root}/existing`, sandbox, [job]);
    expect((await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox) })).exitCode).toBe(0);
    const same = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox) });
    expect(same.stdout).toMatch(/by_type\.csv: unchanged/);

    const wider = await writeWorkspace(`${root}/existing`, sandbox, [{ ...job, query: widerQuery }]);
    const changed = await runCli(['plan', '--config', wider.configFile, '--jobs', wider.jobsDir, '--json'], { env: sandboxEnv(sandbox) });
    expect(changed.exitCode).toBe(0);
    const [plan] = JSON.parse(changed.stdout) as Array<{ sinks: Array<{ action: string; details: string[] }> }>;
    expect(plan!.sinks[0]).toMatchObject({ action: 'change', details: ['+ Newest'] });
  });

  it('exits 1 naming the failure when the tile cannot be planned', async () => {
    const ws = await writeWorkspace(`${root}/unknown`, sandbox, [{ ...job, tile: 'no-such-tile' }]);
    const result = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox) });
    expect(result.exitCode).toBe(1);
    expect(result.stdout).toMatch(/FAILED export_api_error: .*invalid id/);
  });
});

describeWithEmulator('tilehouse plan with a BigQuery sink', (endpoint) => {
  it('shows the table would be created, then unchanged, then refused under a frozen schema', async () => {
    const client = localBigQueryClient(endpoint);
    const dataset = uniqueDatasetId('plan');
    const bqJob = { ...job, sinks: [{ type: 'bigquery', table: 'by_type' }] };
    const write = (jobs: Array<Record<string, unknown>>) => writeBigQueryWorkspace(`${root}/bq`, sandbox, jobs, { projectId: endpoint.projectId, dataset });
    const io = { sinkOptions: { bigqueryClient: client } };

    let ws = await write([bqJob]);
    const fresh = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox), io });
    expect(fresh.stdout).toMatch(new RegExp(`bigquery ${endpoint.projectId}\\.${dataset}\\.by_type: create\\n\\s+\\+ type STRING\\n\\s+\\+ incidents INT64`));
    expect(fresh.exitCode).toBe(0);

    expect((await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox), io })).exitCode).toBe(0);
    const same = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox), io });
    expect(same.stdout).toMatch(/by_type: unchanged/);

    ws = await write([{ ...bqJob, query: widerQuery }]);
    const refused = await runCli(['plan', '--config', ws.configFile, '--jobs', ws.jobsDir], { env: sandboxEnv(sandbox), io });
    expect(refused.stdout).toMatch(/by_type: refuse\n\s+added: newest \(TIMESTAMP\)/);
    expect(refused.exitCode).toBe(1);
  });
});
