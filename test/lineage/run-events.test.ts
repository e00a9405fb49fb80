import { describe, expect, it } from 'vitest';
import type { LineageTileEnd, LineageTileStart } from '../../src/lineage/lineage.js';
import { TileRunEvents, type EventContext } from '../../src/lineage/run-events.js';
import { newUuidV7 } from '../../src/lineage/run-uuid.js';
import { sinkTypes } from '../../src/sinks/registry.js';
import { registerSecret } from '../../src/secret-scrubber.js';
import { openLineageProblems } from '../support/openlineage-schemas.js';

const START: LineageTileStart = {
  job: 'incidents_daily',
  tile: 'tile-42',
  runId: '20261121T213005Z-9f2c1a',
  sourceUrl: 'https://acme.example-incidents.com/api/',
  startedAt: new Date('2026-11-21T21:30:05Z'),
  timezone: 'UTC',
};
const CONTEXT: EventContext = { version: '0.1.0', namespace: 'tilehouse' };
const AT = new Date('2026-11-21T21:31:00Z');
const COLUMNS = [
  { name: 'incident_id', header: 'Incident ID', type: 'INT64' },
  { name: 'severity', header: 'Severity', type: 'STRING' },
];

function ended(outputs: LineageTileEnd['outputs'], more: Partial<LineageTileEnd> = {}): LineageTileEnd {
  return {
    status: 'succeeded',
    rows: 150,
    columns: COLUMNS,
    outputs,
    opened: outputs.map(({ sink, target }) => ({ sink, target })),
    bigqueryJobIds: [],
    ...more,
  };
}

type Dataset = { namespace: string; name: string; facets?: Record<string, Record<string, unknown>>; outputFacets?: Record<string, Record<string, unknown>> };
type Event = {
  eventType: string;
  run: { runId: string; facets: Record<string, Record<string, unknown>> };
  job: { namespace: string; name: string };
  inputs: Dataset[];
  outputs: Dataset[];
};

function valid(event: Record<string, unknown>): Event {
  expect(openLineageProblems(event)).toEqual([]);
  return event as unknown as Event;
}

/** The spec's DatasourceDatasetFacet of a source, as every dataset of every event carries it. */
const dataSource = (name: string, uri: string) => ({
  _producer: 'https://tilehouse.dev/releases/0.1.0',
  _schemaURL: 'https://openlineage.io/spec/facets/1-0-1/DatasourceDatasetFacet.json#/$defs/DatasourceDatasetFacet',
  name,
  uri,
});

/** An output a FAIL or ABORT names without having published to it: its name and its source, nothing else. */
const namedOnly = (namespace: string, name: string, uri: string) => ({ namespace, name, facets: { dataSource: dataSource(namespace, uri) } });

describe('TileRunEvents', () => {
  it('starts a tile run with the tile at its tenant as the input and the job in its namespace', () => {
    const event = valid(new TileRunEvents(START, CONTEXT).started(START.startedAt));
    expect(event.eventType).toBe('START');
    expect(event.job).toMatchObject({ namespace: 'tilehouse', name: 'incidents_daily' });
    expect(event.inputs.map(({ namespace, name }) => ({ namespace, name }))).toEqual([{ namespace: 'https://acme.example-incidents.com', name: 'tile-42' }]);
    expect(event.run.facets.processing_engine).toMatchObject({ name: 'tilehouse', version: '0.1.0' });
    expect((event as unknown as { job: { facets: Record<string, unknown> } }).job.facets.jobType).toMatchObject({
      processingType: 'BATCH',
      integration: 'TILEHOUSE',
    });
  });

  it.each([
    ['csv', 'out/incidents.csv', { namespace: 'file', name: expect.stringMatching(/^\/.*\/out\/incidents\.csv$/) }, 1],
    ['parquet', '/data/incidents.parquet', { namespace: 'file', name: '/data/incidents.parquet' }, 1],
    ['csv', 'gs://acme-exports/daily/incidents.csv', { namespace: 'gs://acme-exports', name: 'daily/incidents.csv' }, 1],
    ['parquet', 's3://acme-lake/tiles/2026/incidents.parquet', { namespace: 's3://acme-lake', name: 'tiles/2026/incidents.parquet' }, 1],
    ['bigquery', 'acme-prod.analytics.incidents$20261121', { namespace: 'bigquery', name: 'acme-prod.analytics.incidents' }, undefined],
  ] as const)('completes a %s run into %s as the dataset the spec names', (sink, target, dataset, fileCount) => {
    const events = new TileRunEvents(START, CONTEXT);
    const event = valid(events.ended(AT, ended([{ sink, target, rows: 150, details: { bytes: 9000, generation: 17 } }]), false));
    expect(event.eventType).toBe('COMPLETE');
    expect(event.run.runId).toBe(events.runId);
    const [output] = event.outputs;
    expect(output).toMatchObject(dataset);
    expect(output?.outputFacets?.outputStatistics).toMatchObject({ rowCount: 150, size: 9000, ...(fileCount === undefined ? {} : { fileCount }) });
    if (fileCount === undefined) expect(output?.outputFacets?.outputStatistics).not.toHaveProperty('fileCount');
    expect(output?.facets?.schema?.fields).toEqual([
      { name: 'incident_id', type: 'INT64', ordinal_position: 1 },
      { name: 'severity', type: 'STRING', ordinal_position: 2 },
    ]);
    // Inputs are repeated on the terminal event, for consumers that read only it.
    expect(event.inputs[0]?.facets?.schema?.fields).toEqual([
      { name: 'Incident ID', type: 'INT64', ordinal_position: 1 },
      { name: 'Severity', type: 'STRING', ordinal_position: 2 },
    ]);
    expect(output?.facets?.columnLineage?.fields).toMatchObject({
      incident_id: {
        inputFields: [
          {
            namespace: 'https://acme.example-incidents.com',
            name: 'tile-42',
            field: 'Incident ID',
            transformations: [{ type: 'DIRECT', subtype: 'IDENTITY' }],
          },
        ],
      },
    });
  });

  it("names the BigQuery jobs and each object's generation in tilehouse's own facet", () => {
    const event = valid(
      new TileRunEvents(START, CONTEXT).ended(
        AT,
        ended(
          [
            { sink: 'bigquery', target: 'p.d.t', rows: 150, details: { jobId: 'job_copy', loadJobId: 'job_load' } },
            { sink: 'csv', target: 'gs://b/k.csv', rows: 150, details: { generation: '1732224665123456' } },
          ],
          { bigqueryJobIds: ['job_copy', 'job_load'] },
        ),
        false,
      ),
    );
    expect(event.run.facets.tilehouse).toMatchObject({
      runId: START.runId,
      status: 'succeeded',
      rows: 150,
      bigqueryJobIds: ['job_copy', 'job_load'],
      objectGenerations: [{ target: 'gs://b/k.csv', generation: '1732224665123456' }],
    });
  });

  it('fails with the error code and its message scrubbed of secrets, naming the targets it opened', () => {
    registerSecret('s3cr3t-token-value');
    const event = valid(
      new TileRunEvents(START, CONTEXT).ended(
        AT,
        {
          ...ended([]),
          status: 'failed',
          rows: 0,
          columns: [],
          opened: [{ sink: 'bigquery', target: 'p.d.t$20261121' }],
          error: { code: 'bigquery_job_failed', message: 'job incidents_daily: refused with token s3cr3t-token-value' },
        },
        false,
      ),
    );
    expect(event.eventType).toBe('FAIL');
    expect(event.run.facets.errorMessage).toMatchObject({ programmingLanguage: 'TypeScript' });
    expect(event.run.facets.errorMessage?.message).toMatch(/^bigquery_job_failed: job incidents_daily: refused with token /);
    expect(JSON.stringify(event)).not.toContain('s3cr3t-token-value');
    expect(event.outputs).toEqual([namedOnly('bigquery', 'p.d.t', 'bigquery:///')]);
  });

  it('fails naming the targets it did not open by their planned datasets, once each, with their source only; one a kind cannot name is left out', () => {
    const failed = {
      ...ended([]),
      status: 'failed' as const,
      rows: 0,
      columns: [],
      opened: [{ sink: 'bigquery' as const, target: 'p.d.t$20261121' }],
      planned: [
        { sink: 'bigquery' as const, dataset: { namespace: 'bigquery', name: 'p.d.t' } },
        { sink: 'postgres' as const, dataset: { namespace: 'postgres://db.internal:5432', name: 'warehouse.public.incidents' } },
        { sink: 'postgres' as const, unknown: "the connection's settings do not resolve: config_invalid" },
      ],
      error: { code: 'export_api_error', message: 'page 0 answered 500' },
    };
    const fail = valid(new TileRunEvents(START, CONTEXT).ended(AT, failed, false));
    expect(fail.outputs).toEqual([
      namedOnly('bigquery', 'p.d.t', 'bigquery:///'),
      namedOnly('postgres://db.internal:5432', 'warehouse.public.incidents', 'postgres://db.internal:5432'),
    ]);
    const abort = valid(new TileRunEvents(START, CONTEXT).ended(AT, { ...failed, opened: [] }, true));
    expect(abort.eventType).toBe('ABORT');
    expect(abort.outputs).toEqual(fail.outputs);
  });

  it('aborts a run stopped by a signal, whatever its summary says', () => {
    const event = valid(
      new TileRunEvents(START, CONTEXT).ended(AT, { ...ended([]), status: 'failed', error: { code: 'run_stopped', message: 'stopped by SIGTERM' } }, true),
    );
    expect(event.eventType).toBe('ABORT');
    expect(event.run.facets.errorMessage?.message).toBe('run_stopped: stopped by SIGTERM');
  });

  it("carries a tripped publish guard's verdicts as the run summary has them: rows held, rows exported, the setting, what changed", () => {
    const guard = {
      tripped: true,
      overridden: false,
      verdicts: [
        {
          target: 'out/a.csv',
          verdict: 'trip',
          rule: 'shrink',
          reason: '10 rows, 90% fewer than 100',
          held: 100,
          exported: 10,
          setting: 'guard.maxShrink',
          changedSince: { runId: '20261120T213005Z-1a2b3c', changes: [{ part: 'query', details: ['filters on Severity'] }, { part: 'sinks' }] },
        },
        { target: 'out/b.csv', verdict: 'off', reason: 'guard: false', exported: 10 },
      ],
    };
    const event = valid(
      new TileRunEvents(START, CONTEXT).ended(
        AT,
        { ...ended([]), status: 'failed', opened: [{ sink: 'csv', target: 'out/a.csv' }], guard, error: { code: 'publish_guard_tripped', message: 'refused' } },
        false,
      ),
    );
    expect(event.eventType).toBe('FAIL');
    expect(event.run.facets.tilehouse?.guard).toEqual(guard);
  });

  it("dates a backfill window's run at the window's midnights in the job's timezone", () => {
    const start = { ...START, runId: 'bf-1-20261120', window: { from: '2026-11-20', to: '2026-11-21' }, timezone: 'Europe/Berlin' };
    const event = valid(new TileRunEvents(start, CONTEXT).ended(AT, ended([{ sink: 'csv', target: 'out/2026-11-20.csv', rows: 3 }]), false));
    expect(event.run.facets.nominalTime).toMatchObject({ nominalStartTime: '2026-11-19T23:00:00.000Z', nominalEndTime: '2026-11-20T23:00:00.000Z' });
    expect(event.run.facets.tilehouse?.window).toEqual({ from: '2026-11-20', to: '2026-11-21' });
  });

  it("names the orchestrator's run as the parent, with its root", () => {
    const parent = {
      run: { namespace: 'airflow', name: 'nightly.export', runId: '01936f2b-4c5d-7e8f-9a0b-1c2d3e4f5a6b' },
      root: { namespace: 'airflow', name: 'nightly', runId: '01936f2b-0000-7000-8000-000000000001' },
    };
    const event = valid(new TileRunEvents(START, { ...CONTEXT, parent }).started(AT));
    expect(event.run.facets.parent).toMatchObject({
      run: { runId: parent.run.runId },
      job: { namespace: 'airflow', name: 'nightly.export' },
      root: { run: { runId: parent.root.runId }, job: { namespace: 'airflow', name: 'nightly' } },
    });
  });
});

// Marquez gives a dataset the source of the first event that names it, for good: an output named
// without its dataSource (a FAIL's, an ABORT's) left a table under `default` forever (issue 62).
// So every dataset of every event kind carries it, for every registered kind, with the name a
// catalog shares with the other producers of that store (the namespace) and a URI the facet's
// schema takes (format: uri).
describe('every dataset of every event names its source, for every registered kind', () => {
  type Kind = (typeof sinkTypes)[number];
  /** Each kind's targets: as its kind names them (no writer's dataset), and as an open writer names them (a server, a table's location). */
  const TARGETS: Array<{ sink: Kind; target: string; dataset?: { namespace: string; name: string }; namespace: string; uri: string }> = [
    { sink: 'csv', target: '/srv/out/incidents.csv', namespace: 'file', uri: 'file:///' },
    { sink: 'csv', target: 'gs://acme-exports/daily/incidents.csv', namespace: 'gs://acme-exports', uri: 'gs://acme-exports' },
    { sink: 'csv', target: 's3://acme-lake/daily/incidents.csv', namespace: 's3://acme-lake', uri: 's3://acme-lake' },
    { sink: 'parquet', target: '/srv/out/incidents.parquet', namespace: 'file', uri: 'file:///' },
    { sink: 'parquet', target: 's3://acme-lake/tiles/incidents.parquet', namespace: 's3://acme-lake', uri: 's3://acme-lake' },
    { sink: 'bigquery', target: 'acme-prod.analytics.incidents$20261121', namespace: 'bigquery', uri: 'bigquery:///' },
    {
      sink: 'postgres',
      target: 'warehouse.public.incidents',
      dataset: { namespace: 'postgres://db.internal:5432', name: 'warehouse.public.incidents' },
      namespace: 'postgres://db.internal:5432',
      uri: 'postgres://db.internal:5432',
    },
    { sink: 'postgres', target: 'public.incidents', namespace: 'postgres', uri: 'postgres:///' },
    {
      sink: 'iceberg',
      target: 'analytics.incidents',
      dataset: { namespace: 'gs://acme-lake', name: 'warehouse/analytics/incidents' },
      namespace: 'gs://acme-lake',
      uri: 'gs://acme-lake',
    },
    {
      sink: 'iceberg',
      target: 'analytics.incidents',
      dataset: { namespace: 'file', name: '/srv/warehouse/analytics/incidents' },
      namespace: 'file',
      uri: 'file:///',
    },
    { sink: 'iceberg', target: 'analytics.incidents', namespace: 'iceberg', uri: 'iceberg:///' },
  ];

  it('covers every registered kind', () => {
    expect([...new Set(TARGETS.map((target) => target.sink))].sort()).toEqual([...sinkTypes].sort());
  });

  const writerOf = ({ sink, target, dataset }: (typeof TARGETS)[number]) => ({ sink, target, ...(dataset === undefined ? {} : { dataset }) });
  const outputOf = ({ sink, target }: (typeof TARGETS)[number]) => ({ sink, target, rows: 150 });
  const failed = { status: 'failed' as const, rows: 0, error: { code: 'source_server_error', message: 'page 0: the server failed with HTTP 500' } };
  /** Each event kind tilehouse sends for a tile run, with the targets as that event has them. RUNNING is never sent (docs/lineage.md). */
  const EVENTS: Array<{
    event: string;
    type: string;
    make: (events: TileRunEvents, kind: (typeof TARGETS)[number]) => Record<string, unknown>;
    outputs: number;
  }> = [
    { event: 'START', type: 'START', make: (events) => events.started(AT), outputs: 0 },
    {
      event: 'COMPLETE (published)',
      type: 'COMPLETE',
      make: (events, kind) => events.ended(AT, { ...ended([outputOf(kind)]), opened: [writerOf(kind)] }, false),
      outputs: 1,
    },
    {
      event: 'FAIL (opened, nothing published: a guard, a publish refused)',
      type: 'FAIL',
      make: (events, kind) => events.ended(AT, { ...ended([]), ...failed, opened: [writerOf(kind)] }, false),
      outputs: 1,
    },
    {
      event: 'FAIL (never opened: page 0 failed, the target as planned)',
      type: 'FAIL',
      make: (events, kind) =>
        events.ended(
          AT,
          {
            ...ended([]),
            ...failed,
            columns: [],
            opened: [],
            planned: [{ sink: kind.sink, dataset: kind.dataset ?? { namespace: kind.namespace, name: kind.target } }],
          },
          false,
        ),
      outputs: 1,
    },
    {
      event: 'FAIL (partially published: this target and a CSV that failed)',
      type: 'FAIL',
      make: (events, kind) =>
        events.ended(
          AT,
          {
            ...ended([outputOf(kind)]),
            status: 'partially_published',
            opened: [writerOf(kind), { sink: 'csv', target: '/srv/out/beside.csv' }],
            error: { code: 'partially_published', message: 'one of two' },
          },
          false,
        ),
      outputs: 2,
    },
    {
      event: 'ABORT (stopped with the target opened)',
      type: 'ABORT',
      make: (events, kind) => events.ended(AT, { ...ended([]), ...failed, opened: [writerOf(kind)] }, true),
      outputs: 1,
    },
    {
      event: 'ABORT (stopped before the target opened)',
      type: 'ABORT',
      make: (events, kind) =>
        events.ended(
          AT,
          { ...ended([]), ...failed, opened: [], planned: [{ sink: kind.sink, dataset: kind.dataset ?? { namespace: kind.namespace, name: kind.target } }] },
          true,
        ),
      outputs: 1,
    },
  ];

  describe.each(EVENTS)('$event', ({ type, make, outputs }) => {
    it.each(TARGETS)('$sink $target: the input and each output carry dataSource, valid against the spec', (kind) => {
      const event = valid(make(new TileRunEvents(START, CONTEXT), kind));
      expect(event.eventType).toBe(type);
      expect(event.inputs.map((input) => input.facets?.dataSource)).toEqual([
        dataSource('https://acme.example-incidents.com', 'https://acme.example-incidents.com'),
      ]);
      expect(event.outputs).toHaveLength(outputs);
      if (outputs === 0) return;
      expect(event.outputs[0]).toMatchObject({ namespace: kind.namespace });
      expect(event.outputs[0]!.facets?.dataSource).toEqual(dataSource(kind.namespace, kind.uri));
      // The partial publish's other target, the local CSV it opened and did not publish to.
      expect(event.outputs.slice(1).map((output) => output.facets)).toEqual(outputs === 2 ? [{ dataSource: dataSource('file', 'file:///') }] : []);
    });
  });
});

describe('the OpenLineage run of a try', () => {
  const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const timeOf = (uuid: string) => Number.parseInt(uuid.replaceAll('-', '').slice(0, 12), 16);

  it('is a fresh UUIDv7 timed when the try started, never the same for a retry with the same tilehouse run id', () => {
    const first = new TileRunEvents(START, CONTEXT);
    const retry = new TileRunEvents(START, CONTEXT);
    expect(first.runId).toMatch(UUID_V7);
    expect(retry.runId).toMatch(UUID_V7);
    expect(retry.runId).not.toBe(first.runId);
    const at = Date.parse('2026-11-22T03:00:00.123Z');
    expect(timeOf(newUuidV7(at))).toBe(at);
    expect(new Set(Array.from({ length: 1000 }, () => newUuidV7(at))).size).toBe(1000);
  });

  it("carries tilehouse's run id on START and on the terminal event, so the tries of one tilehouse run can be grouped", () => {
    const events = new TileRunEvents(START, CONTEXT);
    const start = valid(events.started(AT));
    const end = valid(events.ended(AT, ended([]), false));
    expect(start.run.facets.tilehouse).toMatchObject({ runId: START.runId, status: 'started' });
    expect(start.run.facets.tilehouse).not.toHaveProperty('rows');
    // The facet's schema tells a START's facet (run id and status) from a terminal one (all of it).
    const raw = events.started(AT) as { run: { facets: { tilehouse: Record<string, unknown> } } };
    expect(openLineageProblems({ ...raw, run: { ...raw.run, facets: { tilehouse: { ...raw.run.facets.tilehouse, rows: 0 } } } })).not.toEqual([]);
    const final = events.ended(AT, ended([]), false) as { run: { facets: { tilehouse: Record<string, unknown> } } };
    const { rows: _rows, ...withoutRows } = final.run.facets.tilehouse;
    expect(openLineageProblems({ ...final, run: { ...final.run, facets: { tilehouse: withoutRows } } })).not.toEqual([]);
    expect(end.run.facets.tilehouse).toMatchObject({ runId: START.runId, status: 'succeeded' });
    expect(start.run.runId).toBe(end.run.runId);
  });
});
