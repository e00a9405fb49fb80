// Every registered sink kind runs the conformance scenarios on each of its backends: a kind added
// to src/sinks/registry.ts without a backend here fails this test (and `tsc`, through the Record).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { SinkConfig } from '../../../src/config/job-schema.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { definitionSourceOf, sinkKindOf, sinkKinds } from '../../../src/sinks/registry.js';
import { definitionChanges, definitionPartValues, jobDefinitionOf } from '../../../src/value-types/job-definition.js';

/** The conformance files that run each kind, one per backend family. */
const CONFORMANCE_FILES: Record<SinkConfig['type'], string[]> = {
  csv: ['local.conformance.test.ts', 'objects.conformance.test.ts'],
  parquet: ['local.conformance.test.ts', 'objects.conformance.test.ts'],
  bigquery: ['bigquery.conformance.test.ts'],
  postgres: ['postgres.conformance.test.ts'],
  iceberg: ['iceberg.conformance.test.ts'],
};

describe('the conformance suite', () => {
  it('runs every registered kind on at least one real backend', () => {
    for (const kind of sinkKinds) {
      const files = CONFORMANCE_FILES[kind.type] ?? [];
      expect(files, `${kind.type} has no conformance backend in test/sinks/conformance/`).not.toEqual([]);
      for (const file of files) {
        const text = readFileSync(path.join(import.meta.dirname, file), 'utf8');
        // The file runs the shared scenarios, for this kind.
        expect(text, file).toContain('conformanceScenarios(');
        expect(text.toLowerCase(), `${file} runs ${kind.type}`).toContain(kind.type);
      }
    }
  });
});

/**
 * One sink of each kind as a job file has it, and a setting of it that decides what lands: a
 * kind added to the registry without a line here fails below (and `tsc`, through the Record).
 */
const SAMPLES: Record<SinkConfig['type'], { sink: Record<string, unknown>; decides: [string, unknown] }> = {
  csv: { sink: { type: 'csv', path: 'out/{name}.csv' }, decides: ['path', 'out/{name}-v2.csv'] },
  parquet: { sink: { type: 'parquet', path: 'out/{name}.parquet' }, decides: ['compression', 'zstd'] },
  bigquery: { sink: { type: 'bigquery', table: 'incidents' }, decides: ['table', 'incidents_v2'] },
  postgres: { sink: { type: 'postgres', table: 'incident_status', writeMode: 'merge', primaryKey: ['number'] }, decides: ['primaryKey', ['number', 'type']] },
  iceberg: { sink: { type: 'iceberg', table: 'tiles.incidents', writeMode: 'merge', primaryKey: ['number'] }, decides: ['primaryKey', ['number', 'type']] },
};

/** A job with one sink, as the workspace loads it (the sink parsed by its kind's schema, defaults filled in). */
function jobWith(sink: Record<string, unknown>): LoadedJob {
  const config = sinkKindOf(sink as Pick<SinkConfig, 'type'>).configSchema.parse(sink) as SinkConfig;
  return {
    name: 'incidents',
    tile: 'tile-1',
    query: { items: [{ header: 'Number', formula: '[incident.number]', dataType: 'number' }] },
    sinks: [config],
  } as unknown as LoadedJob;
}

const changesBetween = (before: LoadedJob, after: LoadedJob) =>
  definitionChanges(jobDefinitionOf(definitionSourceOf(before)), jobDefinitionOf(definitionSourceOf(after)));

describe("which parts of the job's definition each kind depends on", () => {
  it('every setting of every kind is named once: deciding what lands, or not', () => {
    for (const kind of sinkKinds) {
      const { decides, decidesNot } = kind.definitionSettings;
      const keys = Object.keys((kind.configSchema as z.ZodObject).shape).sort();
      expect([...decides, ...decidesNot].sort(), `${kind.type}: every key of its config schema, each once`).toEqual(keys);
      expect(decides, `${kind.type}: its guard only decides whether a run may publish`).not.toContain('guard');
    }
  });

  it("a changed guard threshold is not a change of the job's sinks; a changed setting that decides what lands is", () => {
    for (const kind of sinkKinds) {
      const { sink, decides } = SAMPLES[kind.type];
      const before = jobWith(sink);
      expect(changesBetween(before, jobWith({ ...sink, guard: { maxShrink: 0.9, allowEmpty: true } })), `${kind.type}: guard`).toEqual([]);
      expect(jobDefinitionOf(definitionSourceOf(jobWith({ ...sink, guard: false }))).fingerprint).toBe(jobDefinitionOf(definitionSourceOf(before)).fingerprint);
      expect(changesBetween(before, jobWith({ ...sink, [decides[0]]: decides[1] })), `${kind.type}: ${decides[0]}`).toEqual([{ part: 'sinks' }]);
    }
  });

  it("BigQuery's clustering and partition filter rule are not what lands; its partitioning is", () => {
    const sink = { type: 'bigquery', table: 'incidents', partitionBy: { column: 'day' } };
    expect(changesBetween(jobWith(sink), jobWith({ ...sink, clusterBy: ['number'], requirePartitionFilter: true }))).toEqual([]);
    expect(changesBetween(jobWith(sink), jobWith({ ...sink, partitionExpirationDays: 30 }))).toEqual([{ part: 'sinks' }]);
  });

  it("the run history's sinks value holds only the deciding settings (a guard's threshold is not told old → new)", () => {
    const values = definitionPartValues(definitionSourceOf(jobWith({ type: 'csv', path: 'out/a.csv', guard: { maxShrink: 0.9 } })));
    expect(values.sinks).toEqual([{ type: 'csv', settings: { path: 'out/a.csv', gzip: false } }]);
  });
});
