import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeWithEmulator, uniqueDatasetId } from '../support/bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from '../support/bigquery-fake-server.js';
import { readTable, stagingTables } from '../support/bigquery-read.js';
import { writeBigQueryWorkspace } from '../support/bigquery-workspace.js';
import { listFiles, runCli, sandboxEnv, refusalCode, summaryOf } from '../support/cli-harness.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';

/**
 * Issue 25: README.md shows one complete job with a BigQuery sink. It must be a job tilehouse
 * accepts (validate, with the production example as step 1 and 2 of the README set it up) and one
 * that does what the README says: one row per incident, merged by its number.
 */

const ROOT = path.resolve('.');

async function readmeJobText(): Promise<string> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const match = /^### A complete job with a BigQuery sink\n[\s\S]*?^```yaml\n([\s\S]*?)^```$/m.exec(readme);
  if (match === null) throw new Error('README.md has no "### A complete job with a BigQuery sink" section with a yaml block');
  return match[1]!;
}

describe("README.md's complete job with a BigQuery sink", () => {
  const dir = tempDirForAll('tilehouse-readme-job-');

  /** `tilehouse validate --strict` with config/production.example.yaml, its secret file where this test can write it. */
  async function validate(job: string) {
    const jobs = path.join(dir.path, `jobs-${Math.random().toString(36).slice(2)}`);
    await mkdir(jobs);
    await writeFile(path.join(jobs, `${/^name: (\w+)$/m.exec(job)?.[1] ?? 'job'}.yaml`), job);
    const secret = path.join(dir.path, 'client-secret');
    await writeFile(secret, 'not-a-real-secret\n', { mode: 0o600 });
    const example = await readFile(path.join(ROOT, 'config', 'production.example.yaml'), 'utf8');
    expect(example).toContain('/var/run/secrets/tilehouse/client-secret');
    const config = path.join(dir.path, 'production.yaml');
    await writeFile(config, example.replace('/var/run/secrets/tilehouse/client-secret', secret));
    return runCli(['validate', '--strict', '--config', config, '--jobs', jobs], { env: { TILEHOUSE_CLIENT_ID: 'readme-client' } });
  }

  it('passes tilehouse validate --strict: a merge into BigQuery, partitioned and clustered, and a CSV with its manifest', async () => {
    const job = await readmeJobText();
    expect(job).toMatch(/type: bigquery/);
    const result = await validate(job);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^valid: .* and 1 job in .*: incidents$/m);
  });

  it('would be refused, at its line, were its merge key not a column the query shows', async () => {
    // Proves the check above can fail: the same job with a key no visible item has.
    const result = await validate((await readmeJobText()).replace('primaryKey: [Number]', 'primaryKey: [Ticket]'));
    expect(result.exitCode).toBe(2);
    expect(refusalCode(result)).toBe('config_invalid');
    expect(result.stderr).toMatch(/incidents\.yaml:\d+: .*primaryKey/);
  });
});

describeWithEmulator("README.md's complete job, run against the sandbox into BigQuery", (endpoint) => {
  const each = sandboxesEachTest();
  let proxy: EmulatorWithCopyJobs;
  let client: BigQuery;
  const temp = tempDirForAll('tilehouse-readme-job-');
  const dataset = uniqueDatasetId('readme_job');
  let job: Record<string, unknown> & { name: string; tile: string; query: unknown };

  beforeAll(async () => {
    proxy = await startEmulatorWithCopyJobs(endpoint);
    client = proxy.client();
    job = parse(await readmeJobText()) as typeof job;
  });
  afterAll(async () => {
    await proxy?.close();
  });

  /** A run of the job against a sandbox whose clock stands at `day`, as `tilehouse run --json`. */
  async function runOn(day: string) {
    const sandbox = await each.sandbox({ incidents: 2000, now: new Date(`${day}T12:00:00Z`) });
    const ws = await writeBigQueryWorkspace(path.join(temp.path, day), sandbox, [job], { projectId: endpoint.projectId, dataset });
    const result = await runCli(['run', '--config', ws.configFile, '--jobs', ws.jobsDir, '--json'], {
      env: sandboxEnv(sandbox),
      seams: { sinkOptions: { bigqueryClient: client } },
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const summary = summaryOf(result.stdout, 'run');
    // number -> "opened|severity|status" as the source answers the job's query now.
    const source = sandbox
      .evaluate(job.query, job.tile)
      .rows.map(
        ([number, opened, severity, status]) => [Number(number), `${new Date(opened as number).toISOString()}|${String(severity)}|${String(status)}`] as const,
      );
    return { ws, summary, source: new Map(source) };
  }

  async function table(): Promise<Map<number, string>> {
    const rows = await readTable(client, { projectId: endpoint.projectId, dataset, table: 'incidents' }, 'number');
    const numbers = rows.map((row) => Number(row.number));
    expect(new Set(numbers).size, 'each incident once').toBe(numbers.length);
    return new Map(rows.map((row) => [Number(row.number), `${String(row.opened)}|${String(row.severity)}|${String(row.status)}`]));
  }

  it('merges one row per incident by its number; a later night updates the incidents it sees again instead of adding them', async () => {
    const first = await runOn('2026-07-01');
    expect(first.source.size).toBeGreaterThan(10);
    expect(await table()).toEqual(first.source);
    // The CSV sink beside it: a dated file and its manifest.
    const files = await listFiles(path.join(first.ws.outDir, 'incidents'));
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^\d{4}-\d{2}-\d{2}\.csv$/);
    expect(files[1]).toBe(`${files[0]}.manifest.json`);
    expect(first.summary.tiles[0]!.rows).toBe(first.source.size);

    // Two nights later the source's 30 days have moved on; the same numbers come back with their values of now.
    const third = await runOn('2026-07-03');
    const again = [...first.source.keys()].filter((number) => third.source.has(number));
    expect(again.length).toBeGreaterThan(0);
    // Their values changed at the source (the sandbox dates incidents relative to its clock): updated in place.
    expect(again.filter((number) => first.source.get(number) !== third.source.get(number)).length).toBeGreaterThan(0);
    expect(await table()).toEqual(new Map([...first.source, ...third.source]));
    expect(await stagingTables(client, dataset)).toEqual([]);
  }, 120_000);
});
