import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadJob, type LoadedJob } from '../../src/config/load-config.js';
import { judgeRun } from '../../src/history/read-history.js';
import { recordNameOf, type RunRecord } from '../../src/history/run-record.js';
import { definitionSourceOf, type StoredDocuments } from '../../src/sinks/registry.js';
import { definitionPartValues, jobDefinitionOf } from '../../src/value-types/job-definition.js';
import { type Repair, repairFixingFirst } from '../../src/workspace/repairs.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

/**
 * The repair `status` prints leads with the fix when running the job unchanged would fail or be
 * refused again (an edit since the last publish the guard refused; a tile id the source refuses),
 * and is the plain re-run otherwise: a job unchanged, or a failure of its own.
 */

const root = tempDirForAll();
const FLAGS = ['--config', 'env.yaml', '--jobs', 'jobs'];
const RUN = 'tilehouse run --config env.yaml --jobs jobs --job open_csv';
const CLUSTER = 'kubectl create job -n tilehouse --from=cronjob/tilehouse-open-csv tilehouse-open-csv-$(date +%s)';
/** What morning-status's repairOf gives a refused run, and any other. */
const REFUSED_BASE: Repair = {
  note: 'a run again is refused again; if the change is meant, publish it with --allow-shrink',
  commands: [`${RUN} --allow-shrink`],
};
const RERUN_BASE: Repair = { commands: [RUN, CLUSTER] };

const jobText = (filter: string, tile = 'tile-0102') => ({
  name: 'open_csv',
  tile,
  query: {
    items: [
      { header: 'Number', formula: '[incident.number]', dataType: 'number', filters: [{ operator: 'gt', values: [filter] }] },
      { header: 'Created', formula: '[incident.created]', dataType: 'datetime' },
    ],
    options: { pageNumber: 0 },
  },
  sinks: [{ type: 'csv' }],
});

async function jobFile(name: string, text: Record<string, unknown>): Promise<LoadedJob> {
  const file = path.join(root.path, `${name}.yaml`);
  await writeFile(file, stringify(text));
  return loadJob(file);
}

function recordOf(job: LoadedJob, runId: string, startedAt: string, outcome: Pick<RunRecord, 'state' | 'error'>): RunRecord {
  const source = definitionSourceOf(job);
  return {
    version: 1,
    job: job.name,
    tile: job.tile,
    runId,
    trigger: 'run',
    startedAt,
    heartbeatAt: startedAt,
    owner: 'test',
    targets: [],
    definition: { fingerprint: jobDefinitionOf(source).fingerprint, tile: job.tile, values: definitionPartValues(source) },
    ...outcome,
  };
}

/** A history of these records, in memory. */
function documentsOf(records: readonly RunRecord[]): StoredDocuments {
  const texts = new Map(records.map((record) => [`${record.job}/${recordNameOf(record)}`, JSON.stringify(record)]));
  return {
    put: async () => {},
    remove: async () => {},
    list: async (folder) => [...texts.keys()].filter((name) => name.startsWith(`${folder}/`)).map((name) => name.slice(folder.length + 1)),
    get: async (name) => texts.get(name),
  };
}

const REFUSAL = { code: 'publish_guard_tripped', message: 'job open_csv: publish guard tripped, nothing published: out/open_csv.csv: this export has no rows' };
const tileRefusal = (tile: string, api = 'invalid id') => ({
  code: 'export_api_error',
  message: `job open_csv: page 0: export for tile ${tile} (sent as query item tileId) failed with HTTP 400: ${api}; check the job's tile and source.tileParam`,
});

async function lineOf(file: string, text: string): Promise<number> {
  return (await readFile(file, 'utf8')).split('\n').indexOf(text) + 1;
}

describe('repairFixingFirst', () => {
  it("a refusal after the filter was edited: the edit to undo (from the last published run's record), the run, the override only if meant", async () => {
    const before = await jobFile('before', jobText('0'));
    const job = await jobFile('refused', jobText('100000'));
    const published = recordOf(before, 'R1', '2026-11-27T02:00:00.000Z', { state: 'succeeded' });
    const refused = recordOf(job, 'R2', '2026-11-28T02:00:00.000Z', { state: 'failed', error: REFUSAL });
    const repair = await repairFixingFirst(job, REFUSED_BASE, {
      last: judgeRun(refused),
      changes: undefined,
      documents: documentsOf([published, refused]),
      fixFlags: FLAGS,
    });
    expect(repair).toEqual({
      fixFirst: [
        {
          kind: 'undo',
          part: 'filters on Number',
          file: job.file,
          line: await lineOf(job.file, '      filters:'),
          now: '[{"operator":"gt","values":["100000"]}]',
          was: '[{"operator":"gt","values":["0"]}]',
          sinceRunId: 'R1',
        },
      ],
      commands: [RUN, CLUSTER],
      ifMeant: { command: `${RUN} --allow-shrink`, note: 'publishes the smaller export over what the targets hold (TILEHOUSE_ALLOW_SHRINK=1 on the cluster)' },
    });
  });

  it('a refusal of a job unchanged since its last publish (the source shrank): nothing to undo, the override alone', async () => {
    const job = await jobFile('unchanged', jobText('0'));
    const published = recordOf(job, 'R1', '2026-11-27T02:00:00.000Z', { state: 'succeeded' });
    const refused = recordOf(job, 'R2', '2026-11-28T02:00:00.000Z', { state: 'failed', error: REFUSAL });
    const repair = await repairFixingFirst(job, REFUSED_BASE, {
      last: judgeRun(refused),
      changes: undefined,
      documents: documentsOf([published, refused]),
      fixFlags: FLAGS,
    });
    expect(repair).toBe(REFUSED_BASE);
  });

  it("a tile id the source refuses: named with the job file's line, and the id the last publish ran with", async () => {
    const job = await jobFile('swapped', jobText('0', 'tile-0120'));
    const failed = recordOf(job, 'R2', '2026-11-28T02:00:00.000Z', { state: 'failed', error: tileRefusal('tile-0120') });
    const repair = await repairFixingFirst(job, RERUN_BASE, {
      last: judgeRun(failed),
      changes: { sinceRunId: 'R1', values: [{ part: 'tile', old: '"tile-0102"', new: '"tile-0120"' }] },
      documents: documentsOf([failed]),
      fixFlags: FLAGS,
    });
    expect(repair).toEqual({
      fixFirst: [
        {
          kind: 'tile',
          file: job.file,
          line: await lineOf(job.file, 'tile: tile-0120'),
          tile: 'tile-0120',
          refusal: 'HTTP 400: invalid id',
          published: { runId: 'R1', tile: 'tile-0102' },
        },
      ],
      commands: [RUN, CLUSTER],
    });
  });

  it('a tile deleted at the source (the job unchanged): the tile id is still the thing to fix', async () => {
    const job = await jobFile('deleted', jobText('0'));
    const published = recordOf(job, 'R1', '2026-11-27T02:00:00.000Z', { state: 'succeeded' });
    const failed = recordOf(job, 'R2', '2026-11-28T02:00:00.000Z', { state: 'failed', error: tileRefusal('tile-0102') });
    const repair = await repairFixingFirst(job, RERUN_BASE, {
      last: judgeRun(failed),
      changes: undefined,
      documents: documentsOf([published, failed]),
      fixFlags: FLAGS,
    });
    expect(repair.fixFirst).toEqual([
      { kind: 'tile', file: job.file, line: await lineOf(job.file, 'tile: tile-0102'), tile: 'tile-0102', refusal: 'HTTP 400: invalid id' },
    ]);
  });

  it('the query refused with nothing changed, and a failure of its own after an edit, are plain re-runs', async () => {
    const before = await jobFile('own-before', jobText('0'));
    const job = await jobFile('own', jobText('5'));
    const published = recordOf(before, 'R1', '2026-11-27T02:00:00.000Z', { state: 'succeeded' });
    const query = recordOf(before, 'R2', '2026-11-28T02:00:00.000Z', { state: 'failed', error: tileRefusal('tile-0102', 'invalid query') });
    expect(
      await repairFixingFirst(before, RERUN_BASE, { last: judgeRun(query), changes: undefined, documents: documentsOf([published, query]), fixFlags: FLAGS }),
    ).toBe(RERUN_BASE);
    const denied = recordOf(job, 'R2', '2026-11-28T02:00:00.000Z', { state: 'failed', error: { code: 'permission_denied', message: 'lacks UPDATE' } });
    expect(
      await repairFixingFirst(job, RERUN_BASE, { last: judgeRun(denied), changes: undefined, documents: documentsOf([published, denied]), fixFlags: FLAGS }),
    ).toBe(RERUN_BASE);
  });
});
