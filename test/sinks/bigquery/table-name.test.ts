import type { BigQuery } from '@google-cloud/bigquery';
import { describe, expect, it } from 'vitest';
import type { EnvironmentConfig } from '../../../src/config/environment-schema.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import type { RecordedTile } from '../../../src/sinks/sink-kind.js';
import { LedgerTargets } from '../../../src/sinks/bigquery/ledger-recorder.js';
import { configuredTable, datasetName, sinkLabel, tableName, UNRESOLVED_PROJECT } from '../../../src/sinks/bigquery/table-name.js';

describe('tableName', () => {
  it('names project.dataset.table, a partition by its table id, a domain-scoped project as it is', () => {
    expect(tableName({ projectId: 'my-proj', datasetId: 'sales', tableId: 'daily' })).toBe('my-proj.sales.daily');
    expect(tableName({ projectId: 'my-proj', datasetId: 'sales', tableId: 'daily$20260601' })).toBe('my-proj.sales.daily$20260601');
    expect(tableName({ projectId: 'example.com:proj', datasetId: 'd', tableId: 't' })).toBe('example.com:proj.d.t');
  });

  it('shows a project only ADC will name as (default project), in table and dataset names alike', () => {
    expect(tableName({ projectId: undefined, datasetId: 'd', tableId: 't' })).toBe('(default project).d.t');
    expect(datasetName({ projectId: undefined, datasetId: 'd' })).toBe('(default project).d');
    expect(datasetName({ projectId: 'p', datasetId: 'd' })).toBe('p.d');
  });
});

describe('sinkLabel', () => {
  it('names the sink a layout problem is about by dataset and table, without the project', () => {
    expect(sinkLabel({ datasetId: 'sales', tableId: 'daily' })).toBe('bigquery sales.daily');
    expect(sinkLabel(configuredTable({}, { dataset: 'shared' }, 'daily'))).toBe('bigquery shared.daily');
  });
});

describe('configuredTable', () => {
  it("takes the sink's dataset and table, else the environment's dataset and the job's name", () => {
    expect(configuredTable({ dataset: 'own', table: 'tbl' }, { projectId: 'p', dataset: 'shared' }, 'daily')).toEqual({
      projectId: 'p',
      datasetId: 'own',
      tableId: 'tbl',
    });
    expect(configuredTable({}, { dataset: 'shared' }, 'daily')).toEqual({ projectId: undefined, datasetId: 'shared', tableId: 'daily' });
    expect(configuredTable({}, undefined, 'daily')).toEqual({ projectId: undefined, datasetId: '', tableId: 'daily' });
  });
});

/** A client whose project ADC names on request, counting the requests. */
function fakeClient(resolved: string | undefined): BigQuery & { asked: number } {
  const client = {
    projectId: UNRESOLVED_PROJECT,
    asked: 0,
    async getProjectId() {
      client.asked += 1;
      if (resolved === undefined) throw new Error('no ADC project');
      return resolved;
    },
  };
  return client as unknown as BigQuery & { asked: number };
}

const job = { name: 'daily', sinks: [{ type: 'csv' }, { type: 'bigquery', table: 'facts' }, { type: 'bigquery', dataset: 'other' }] } as unknown as LoadedJob;
const tile = (parts: Partial<RecordedTile>): RecordedTile => ({
  job: 'daily',
  tile: 't',
  runId: 'r',
  status: 'succeeded',
  rows: 3,
  durationMs: 1,
  columns: [],
  outputs: [],
  targets: [],
  ...parts,
});
type Defaults = EnvironmentConfig['sinks']['bigquery'];

describe('LedgerTargets (the run ledger finds its tables by name, never by parsing one)', () => {
  const defaults = { dataset: 'sales', projectId: 'proj' } as Defaults;

  it('takes the published tables and partitions of the job, with their datasets, and leaves CSV targets and foreign tables out', async () => {
    const targets = new LedgerTargets([job], defaults, fakeClient(undefined));
    const found = await targets.of(
      tile({
        outputs: [
          { sink: 'csv', target: '/out/proj.sales.facts', rows: 3 },
          { sink: 'bigquery', target: 'proj.sales.facts$20260601', rows: 3, details: { jobId: 'j' } },
          { sink: 'bigquery', target: 'proj.other.daily', rows: 2 },
          { sink: 'bigquery', target: 'proj.sales.factsheet', rows: 9 },
        ],
        targets: ['/out/proj.sales.facts', 'proj.sales.facts$20260601', 'proj.other.daily'],
      }),
    );
    expect(found).toEqual([
      { projectId: 'proj', datasetId: 'sales', target: 'proj.sales.facts$20260601', published: true, rows: 3, details: { jobId: 'j' } },
      { projectId: 'proj', datasetId: 'other', target: 'proj.other.daily', published: true, rows: 2, details: undefined },
    ]);
  });

  it('records an opened table that was not published as unpublished', async () => {
    const found = await new LedgerTargets([job], defaults, fakeClient(undefined)).of(
      tile({ status: 'failed', targets: ['proj.sales.facts'], unpublished: ['proj.other.daily'] }),
    );
    expect(found.map((target) => [target.target, target.datasetId, target.published])).toEqual([
      ['proj.other.daily', 'other', false],
      ['proj.sales.facts', 'sales', false],
    ]);
  });

  it('names every configured table of a run that opened nothing (a refused token), when the project is known', async () => {
    const found = await new LedgerTargets([job], defaults, fakeClient(undefined)).of(tile({ status: 'failed' }));
    expect(found.map((target) => target.target)).toEqual(['proj.sales.facts', 'proj.other.daily']);
  });

  it('asks ADC for the project once when the environment names none, and only for a run that opened something', async () => {
    const client = fakeClient('adc-proj');
    const targets = new LedgerTargets([job], { dataset: 'sales' } as Defaults, client);
    expect(await targets.of(tile({ status: 'failed' }))).toEqual([]);
    expect(client.asked).toBe(0);
    const opened = tile({ outputs: [{ sink: 'bigquery', target: 'adc-proj.sales.facts', rows: 3 }], targets: ['adc-proj.sales.facts'] });
    expect((await targets.of(opened)).map((target) => target.target)).toEqual(['adc-proj.sales.facts']);
    expect((await targets.of(opened)).map((target) => target.projectId)).toEqual(['adc-proj']);
    expect(client.asked).toBe(1);
  });

  it('records nothing when ADC cannot name the project either', async () => {
    const found = await new LedgerTargets([job], { dataset: 'sales' } as Defaults, fakeClient(undefined)).of(tile({ targets: ['x.sales.facts'] }));
    expect(found).toEqual([]);
  });
});
