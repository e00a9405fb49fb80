// What `tilehouse init` is told of the workspace an imported request goes into, decided in config/:
// the job files that take its name or export its tile, and the source settings that differ.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../src/config/environment-schema.js';
import { environmentDifferences, jobsSharing } from '../../src/config/import-conflicts.js';
import { PLACEHOLDER_SINK, renderImportedJob, sinkKindNames } from '../../src/config/import-job.js';
import { importRequest, type ImportedRequest } from '../../src/config/import-request.js';
import { workspacePaths } from '../../src/workspace/load-workspace.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const TILE = '65f0a1c2d3e4f5a6b7c8d9aa';
const BODY = {
  items: [{ header: 'Severity', formula: '[incident.severity_label]', dataType: 'text', filters: [] }],
  options: { pageNumber: 0, itemsPerPage: 50 },
};
const request: ImportedRequest = importRequest(`https://acme.example.com/reports/api/v1/topics/incident/execute?tileId=${TILE}\n${JSON.stringify(BODY)}\n`, {
  source: 'request.txt',
});

const environmentWith = (baseUrl: string, tileParam: string) => ({ source: { baseUrl, tileParam } }) as unknown as EnvironmentConfig;

describe('jobsSharing', () => {
  const dir = tempDirEachTest('tilehouse-import-');

  it('names the file with the same name and every file with the same tile, leaving out the target itself', async () => {
    const jobs = path.join(dir.path, 'jobs');
    await mkdir(jobs);
    await writeFile(path.join(jobs, 'a.yaml'), `name: severity\ntile: other\n`);
    await writeFile(path.join(jobs, 'b.yml'), `name: b\ntile: ${TILE}\n`);
    await writeFile(path.join(jobs, 'severity.yaml'), `name: severity\ntile: ${TILE}\n`);
    await writeFile(path.join(jobs, 'broken.yaml'), 'name: [unclosed\n');
    await writeFile(path.join(jobs, 'notes.txt'), `name: severity\ntile: ${TILE}\n`);
    expect(await jobsSharing(jobs, path.join(jobs, 'severity.yaml'), 'severity', TILE)).toEqual({
      sameName: path.join(jobs, 'a.yaml'),
      sameTile: [path.join(jobs, 'b.yml')],
    });
  });

  it('finds nothing in a directory that does not exist yet, and nothing when no file shares either', async () => {
    expect(await jobsSharing(path.join(dir.path, 'none'), path.join(dir.path, 'none', 'x.yaml'), 'x', TILE)).toEqual({ sameTile: [] });
    await writeFile(path.join(dir.path, 'a.yaml'), 'name: a\ntile: t\n');
    expect(await jobsSharing(dir.path, path.join(dir.path, 'x.yaml'), 'x', TILE)).toEqual({ sameTile: [] });
  });
});

describe('environmentDifferences', () => {
  it('is empty when the base URL (trailing slash or not) and the tile parameter match', () => {
    expect(request.baseUrl).toBe('https://acme.example.com/reports');
    expect(environmentDifferences(request, environmentWith('https://acme.example.com/reports/', 'tileId'))).toEqual([]);
  });

  it('names each setting that differs, with what the request needs and what is there now', () => {
    expect(environmentDifferences(request, environmentWith('https://other.example.com', 'tile'))).toEqual([
      { field: 'source.baseUrl', wanted: 'https://acme.example.com/reports', now: 'https://other.example.com' },
      { field: 'source.tileParam', wanted: 'tileId', now: 'tile' },
    ]);
  });
});

describe('the sink kinds an imported job is offered', () => {
  it('are every kind of the job schema, Parquet, PostgreSQL and Iceberg included, named in the job file written', () => {
    expect(sinkKindNames()).toEqual(['csv', 'bigquery', 'parquet', 'postgres', 'iceberg']);
    expect(PLACEHOLDER_SINK).toBe('csv');
    const text = renderImportedJob(request, 'severity');
    expect(text).toContain('  - type: csv ');
    expect(text).toContain('use another kind: csv, bigquery, parquet, postgres, iceberg');
  });
});

describe('workspacePaths', () => {
  it('takes the flags, else the environment, else config/default.yaml and jobs; says whether the config was named', () => {
    expect(workspacePaths({}, {})).toEqual({ configFile: 'config/default.yaml', jobsDirectory: 'jobs', configNamed: false });
    expect(workspacePaths({}, { TILEHOUSE_CONFIG: 'c.yaml', TILEHOUSE_JOBS: 'j' })).toEqual({ configFile: 'c.yaml', jobsDirectory: 'j', configNamed: true });
    expect(workspacePaths({ config: 'f.yaml', jobs: 'd' }, { TILEHOUSE_CONFIG: 'c.yaml', TILEHOUSE_JOBS: 'j' })).toEqual({
      configFile: 'f.yaml',
      jobsDirectory: 'd',
      configNamed: true,
    });
  });
});
