import { describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../src/config/environment-schema.js';
import type { SinkConfig } from '../../src/config/job-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { sinkSchema } from '../../src/config/sink-schemas.js';
import { sinkKindOf, sinkKinds } from '../../src/sinks/registry.js';

const jobWith = (...sinks: object[]): LoadedJob => ({ name: 'daily', file: 'jobs/daily.yaml', sinks }) as unknown as LoadedJob;
const environment = (runLedger?: boolean): EnvironmentConfig =>
  ({ sinks: { csv: { directory: 'out' }, bigquery: { dataset: 'd', ...(runLedger === undefined ? {} : { runLedger }) } } }) as unknown as EnvironmentConfig;
const windowed = (sink: object, index = 0) => sinkKindOf(sink as SinkConfig).forWindows(sink as SinkConfig, index, jobWith(sink));

describe('the sink registry', () => {
  it('lists each kind once, CSV before BigQuery, then Parquet, PostgreSQL and Iceberg', () => {
    expect(sinkKinds.map((kind) => kind.type)).toEqual(['csv', 'bigquery', 'parquet', 'postgres', 'iceberg']);
  });

  it("names, for each kind, the config schema the job schema's sink union holds, in the same order", () => {
    expect(sinkKinds).toHaveLength(sinkSchema.options.length);
    sinkKinds.forEach((kind, index) => expect(kind.configSchema).toBe(sinkSchema.options[index]));
  });

  it('gives a windowed CSV sink the default {date} path, gzip or not, and refuses a path without {date}', () => {
    expect(windowed({ type: 'csv' }).sink).toMatchObject({ path: '{name}/{date}.csv' });
    expect(windowed({ type: 'csv', gzip: true }).sink).toMatchObject({ path: '{name}/{date}.csv.gz' });
    expect(windowed({ type: 'csv', path: 'out/{date}.csv' }).problems).toEqual([]);
    expect(windowed({ type: 'csv', path: 'out/all.csv' }, 2).problems).toEqual([
      { file: 'jobs/daily.yaml', field: 'sinks[2].path', value: '"out/all.csv"', message: 'a backfill writes one file per window: the path needs {date}' },
    ]);
  });

  it('gives a windowed Parquet sink the default {date} path and refuses a path without {date}', () => {
    expect(windowed({ type: 'parquet' }).sink).toMatchObject({ path: '{name}/{date}.parquet' });
    expect(windowed({ type: 'parquet', path: 'lake/{date}/part.parquet' }).problems).toEqual([]);
    expect(windowed({ type: 'parquet', path: 'lake/all.parquet' }, 1).problems).toEqual([
      { file: 'jobs/daily.yaml', field: 'sinks[1].path', value: '"lake/all.parquet"', message: 'a backfill writes one file per window: the path needs {date}' },
    ]);
  });

  it('lets a windowed BigQuery sink write partitions or merge, and takes merged windows one at a time', () => {
    expect(windowed({ type: 'bigquery', writeMode: 'partition' }).problems).toEqual([]);
    expect(windowed({ type: 'bigquery', writeMode: 'merge' }).problems).toEqual([]);
    expect(windowed({ type: 'bigquery', writeMode: 'replace' }).problems.map((problem) => problem.field)).toEqual(['sinks[0].writeMode']);
    const merge = { type: 'bigquery', writeMode: 'merge' } as SinkConfig;
    expect(sinkKindOf(merge).takesWindowsOneAtATime(merge)).toBe(true);
    const csv = { type: 'csv' } as SinkConfig;
    expect(sinkKindOf(csv).takesWindowsOneAtATime(csv)).toBe(false);
  });

  it('says why --resume cannot read a kind: a CSV sink without manifest, a BigQuery sink without the ledger', () => {
    const refusals = (job: LoadedJob, env: EnvironmentConfig) =>
      sinkKinds.map((kind) => kind.resumeRefusal(job, env)).filter((refusal) => refusal !== undefined);
    expect(refusals(jobWith({ type: 'csv', manifest: true }, { type: 'bigquery' }), environment())).toEqual([]);
    expect(refusals(jobWith({ type: 'bigquery' }, { type: 'csv' }), environment(false))).toEqual([
      'backfill: --resume tells a finished CSV window by its manifest: set manifest: true on sinks[1] of daily (then run once without --resume)',
      'backfill: --resume reads the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off',
    ]);
    expect(refusals(jobWith({ type: 'parquet', manifest: true }), environment())).toEqual([]);
    expect(refusals(jobWith({ type: 'csv', manifest: true }, { type: 'parquet' }), environment())).toEqual([
      'backfill: --resume tells a finished Parquet window by its manifest: set manifest: true on sinks[1] of daily (then run once without --resume)',
    ]);
  });
});
