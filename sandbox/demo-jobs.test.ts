import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { jobSchema, type JobConfig } from '../src/config/job-schema.js';
import { DEFAULT_TILE_IDS, DEMO_TILES, startSandbox, type Sandbox } from './index.js';
import { exportAll, fetchToken } from './test-client.js';

const JOBS_DIR = fileURLToPath(new URL('../jobs/', import.meta.url));
const DEMO_JOBS = [
  'daily_incidents_by_severity',
  'incident_types_resolution',
  'incidents_by_month_severity',
  'incidents_incremental',
  'tag_postmortem_breakdown',
];
const EMULATOR_JOB = fileURLToPath(new URL('../examples/emulator/jobs/incidents_incremental.yaml', import.meta.url));

async function loadJob(name: string): Promise<JobConfig> {
  return jobSchema.parse(parse(await readFile(path.join(JOBS_DIR, `${name}.yaml`), 'utf8')));
}

describe('demo jobs', () => {
  let sandbox: Sandbox;
  // The demo script runs the sandbox with 2000 incidents.
  beforeAll(async () => {
    sandbox = await startSandbox({ incidents: 2000 });
  });
  afterAll(() => sandbox.close());

  it('are the five jobs in jobs/', async () => {
    const files = (await readdir(JOBS_DIR)).filter((file) => file.endsWith('.yaml')).sort();
    expect(files).toEqual(expect.arrayContaining(DEMO_JOBS.map((name) => `${name}.yaml`)));
  });

  it.each(DEMO_JOBS)('%s is a valid job named after its file, for a tile the sandbox knows', async (name) => {
    const job = await loadJob(name);
    expect(job.name).toBe(name);
    expect(DEFAULT_TILE_IDS).toContain(job.tile);
    expect(job.sinks.map((sink) => sink.type)).toEqual(['csv']);
  });

  it.each(DEMO_JOBS)('%s evaluates to a non-empty table of its visible items, with overrides on real headers', async (name) => {
    const job = await loadJob(name);
    const table = sandbox.evaluate(job.query, job.tile);
    const visible = job.query.items.filter((item) => item.hidden !== true);
    expect(table.headers).toEqual(visible.map((item) => item.header));
    expect(table.dataTypes).toEqual(visible.map((item) => item.dataType));
    expect(table.rows.length).toBeGreaterThan(0);
    for (const header of Object.keys(job.columns)) expect(table.headers).toContain(header);
    for (const [header, { type }] of Object.entries(job.columns)) {
      if (type !== 'INT64') continue;
      const index = table.headers.indexOf(header);
      for (const row of table.rows) expect(Number.isInteger(row[index])).toBe(true);
    }
  });

  it('incidents_by_month_severity covers the 12 months before now, every severity, and all incidents of the window', async () => {
    const job = await loadJob('incidents_by_month_severity');
    expect(job.tile).toBe(DEMO_TILES.incidentsByMonthSeverity);
    const { rows } = sandbox.evaluate(job.query, job.tile);
    const months = [...new Set(rows.map((row) => row[0]))];
    expect(months).toEqual(Array.from({ length: 12 }, (_, k) => new Date(Date.UTC(2025, 6 + k, 1)).toISOString().slice(0, 10)));
    expect(new Set(rows.map((row) => row[1]))).toEqual(new Set(['SEV0', 'SEV1', 'SEV2', 'SEV3']));
    const windowed = sandbox.evaluate({
      items: [
        { header: 'N', formula: '[incident.number]', dataType: 'number', aggregate: 'count' },
        { ...job.query.items[4]!, hidden: true },
      ],
    });
    expect(rows.reduce((sum, row) => sum + (row[2] as number), 0)).toBe(windowed.rows[0]![0]);
  });

  it('incident_types_resolution shows the resolved share as a percentage of two counts', async () => {
    const job = await loadJob('incident_types_resolution');
    const { headers, rows } = sandbox.evaluate(job.query, job.tile);
    expect(headers).toEqual(['Incident type', 'Incidents', 'Resolved', 'Resolved share', 'SEV0-1 incidents']);
    for (const [, total, resolved, share] of rows as [string, number, number, string][]) {
      expect(share).toBe(`${Math.round((resolved / total) * 1000) / 10}%`);
    }
    const totals = rows.map((row) => row[1] as number);
    expect(totals).toEqual([...totals].sort((a, b) => b - a));
  });

  it('tag_postmortem_breakdown keeps combinations of at least three incidents, with readable root causes', async () => {
    const job = await loadJob('tag_postmortem_breakdown');
    const { rows } = sandbox.evaluate(job.query, job.tile);
    expect(rows.every((row) => (row[2] as number) > 2)).toBe(true);
    expect(rows.map((row) => row[1])).toContain('Config change');
    expect(rows.find((row) => row[0] === 'database' && row[1] === 'Config change')?.[5]).toBe('database/config_change');
  });

  it('exports the same rows over HTTP as evaluate() gives, page by page', async () => {
    const job = await loadJob('tag_postmortem_breakdown');
    const token = await fetchToken(sandbox);
    const { rows } = await exportAll(sandbox, token, job.query, job.query.options.itemsPerPage ?? 50);
    expect(rows).toEqual(sandbox.evaluate(job.query, job.tile).rows);
    expect(rows.length).toBeGreaterThan(50);
  });

  it('incidents_incremental has one row per incident, the day it was opened as its bucket, and starts a few days before the sandbox clock', async () => {
    const job = await loadJob('incidents_incremental');
    expect(job.tile).toBe(DEMO_TILES.incidentsIncremental);
    expect(job.incremental).toMatchObject({ item: 'day', bucketColumn: 'Day', startFrom: '2026-06-28' });
    expect(job.sinks).toEqual([expect.objectContaining({ type: 'csv', path: '{name}/{date}.csv', manifest: true })]);
    const { rows } = sandbox.evaluate(job.query, job.tile);
    const numbers = rows.map((row) => row[0]);
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(rows.filter((row) => (row[1] as string) >= '2026-06-28').length).toBeGreaterThan(0);
  });

  it('the emulator example is incidents_incremental with a merge sink added, and nothing else changed', async () => {
    const job = await loadJob('incidents_incremental');
    const emulator = jobSchema.parse(parse(await readFile(EMULATOR_JOB, 'utf8')));
    expect(emulator.sinks).toEqual([...job.sinks, expect.objectContaining({ type: 'bigquery', writeMode: 'merge', primaryKey: ['Number'] })]);
    expect({ ...emulator, sinks: job.sinks }).toEqual(job);
  });
});
