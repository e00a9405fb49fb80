import { scrubSecrets } from '../secret-scrubber.js';
import { zoneClock } from '../transform/values/zone-clock.js';
import { sinkKindOf } from '../sinks/registry.js';
import type { LineageDatasetName } from '../sinks/sink-kind.js';
import type { AbandonedTileRun, LineageTileEnd, LineageTileStart } from './lineage.js';
import type { LineageRunRef } from './lineage-settings.js';
import { newUuidV7 } from './run-uuid.js';

/**
 * OpenLineage RunEvents of a tile run (spec 2-0-2, schema/openlineage/), made from what the
 * pipeline reports: plain JSON, checked against the spec's own schemas by the tests.
 */

export const SPEC_URL = 'https://openlineage.io/spec/2-0-2/OpenLineage.json';
const RUN_EVENT_SCHEMA = `${SPEC_URL}#/$defs/RunEvent`;
export const TILEHOUSE_FACET_SCHEMA = 'https://tilehouse.dev/schema/openlineage/TilehouseRunFacet.json#/$defs/TilehouseRunFacet';

/** Each standard facet's schema, at the version in schema/openlineage/facets/. */
const FACET_SCHEMAS = {
  schema: 'facets/1-2-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet',
  outputStatistics: 'facets/1-0-2/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet',
  dataSource: 'facets/1-0-1/DatasourceDatasetFacet.json#/$defs/DatasourceDatasetFacet',
  jobType: 'facets/2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet',
  errorMessage: 'facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet',
  nominalTime: 'facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet',
  processing_engine: 'facets/1-1-1/ProcessingEngineRunFacet.json#/$defs/ProcessingEngineRunFacet',
  parent: 'facets/1-2-0/ParentRunFacet.json#/$defs/ParentRunFacet',
  columnLineage: 'facets/1-2-0/ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet',
} as const;

export type EventType = 'START' | 'COMPLETE' | 'FAIL' | 'ABORT';
type Json = Record<string, unknown>;

export interface EventContext {
  /** tilehouse's version. */
  version: string;
  /** The namespace of tilehouse's jobs. */
  namespace: string;
  parent?: { run: LineageRunRef; root: LineageRunRef } | undefined;
  /** The run's nominal window (`--window-start` / `--window-end`), for a tile run without a day window of its own. */
  nominal?: { start: string; end?: string | undefined } | undefined;
}

function producerOf(version: string): string {
  return `https://tilehouse.dev/releases/${version}`;
}

function facet(context: EventContext, schema: keyof typeof FACET_SCHEMAS, fields: Json): Json {
  return { _producer: producerOf(context.version), _schemaURL: `https://openlineage.io/spec/${FACET_SCHEMAS[schema]}`, ...fields };
}

/** The input: the tile at its tenant (no naming rule for HTTP APIs yet: the origin, then the tile id; docs/lineage.md). */
export function inputDatasetOf(start: Pick<LineageTileStart, 'sourceUrl' | 'tile'>): LineageDatasetName {
  return { namespace: new URL(start.sourceUrl).origin, name: start.tile };
}

/** The nominal time of a tile run: its day window (midnight to midnight in the job's zone), else the run's. */
function nominalTimeOf(start: LineageTileStart, context: EventContext): { nominalStartTime: string; nominalEndTime?: string } | undefined {
  if (start.window !== undefined) {
    const clock = zoneClock(start.timezone);
    const at = (date: string) => new Date(clock.toInstant(Date.parse(`${date}T00:00:00Z`))).toISOString();
    return { nominalStartTime: at(start.window.from), nominalEndTime: at(start.window.to) };
  }
  if (context.nominal === undefined) return undefined;
  const { start: from, end } = context.nominal;
  return { nominalStartTime: new Date(from).toISOString(), ...(end === undefined ? {} : { nominalEndTime: new Date(end).toISOString() }) };
}

export class TileRunEvents {
  readonly runId: string;
  private readonly input: LineageDatasetName;

  /**
   * `runId`: this try's own OpenLineage run (default a fresh UUIDv7 timed now): each tile run, each
   * window, each retry with the same --run-id, is a run of its own, since a terminal event is final.
   */
  constructor(
    private readonly start: LineageTileStart,
    private readonly context: EventContext,
    runId: string = newUuidV7(Date.now()),
  ) {
    this.runId = runId;
    this.input = inputDatasetOf(start);
  }

  started(at: Date): Json {
    // tilehouse's run id on START too: a catalog groups the tries of one tilehouse run by it.
    const tilehouse = { _producer: producerOf(this.context.version), _schemaURL: TILEHOUSE_FACET_SCHEMA, runId: this.start.runId, status: 'started' };
    return this.event('START', at, { tilehouse }, [this.inputDataset()], []);
  }

  /** COMPLETE, FAIL or ABORT, inputs and outputs repeated (some consumers read only the terminal event). */
  ended(at: Date, end: LineageTileEnd, stopped: boolean): Json {
    const type: EventType = stopped ? 'ABORT' : end.status === 'succeeded' ? 'COMPLETE' : 'FAIL';
    const runFacets: Json = { tilehouse: this.tilehouseFacet(end) };
    if (end.error !== undefined && type !== 'COMPLETE') {
      runFacets.errorMessage = facet(this.context, 'errorMessage', {
        message: scrubSecrets(`${end.error.code}: ${end.error.message}`),
        programmingLanguage: 'TypeScript',
      });
    }
    return this.event(type, at, runFacets, [this.inputDataset(end)], this.outputDatasets(end));
  }

  /**
   * FAIL for a try killed between its START and its end, sent by a later run of the job: the
   * error message says so and who closed it; no rows or outputs, which the record cannot know.
   * FAIL rather than ABORT: nobody asked it to stop (ABORT is a SIGTERM's), and a catalog
   * alerting on failed runs must see it.
   */
  abandoned(at: Date, run: Pick<AbandonedTileRun, 'killedBecause' | 'closedBy'>): Json {
    const tilehouse = {
      _producer: producerOf(this.context.version),
      _schemaURL: TILEHOUSE_FACET_SCHEMA,
      runId: this.start.runId,
      status: 'killed',
      closedBy: run.closedBy,
    };
    const errorMessage = facet(this.context, 'errorMessage', {
      message: scrubSecrets(`killed: still "running" in the run history, but ${run.killedBecause}; closed by tilehouse run ${run.closedBy} of the job`),
      programmingLanguage: 'TypeScript',
    });
    return this.event('FAIL', at, { tilehouse, errorMessage }, [this.inputDataset()], []);
  }

  private event(type: EventType, at: Date, runFacets: Json, inputs: Json[], outputs: Json[]): Json {
    const { context, start } = this;
    const nominal = nominalTimeOf(start, context);
    return {
      eventType: type,
      eventTime: at.toISOString(),
      producer: producerOf(context.version),
      schemaURL: RUN_EVENT_SCHEMA,
      run: {
        runId: this.runId,
        facets: {
          ...(nominal === undefined ? {} : { nominalTime: facet(context, 'nominalTime', nominal) }),
          processing_engine: facet(context, 'processing_engine', { name: 'tilehouse', version: context.version, openlineageAdapterVersion: context.version }),
          ...(context.parent === undefined ? {} : { parent: this.parentFacet(context.parent) }),
          ...runFacets,
        },
      },
      job: {
        namespace: context.namespace,
        name: start.job,
        facets: { jobType: facet(context, 'jobType', { processingType: 'BATCH', integration: 'TILEHOUSE', jobType: 'JOB' }) },
      },
      inputs,
      outputs,
    };
  }

  private parentFacet(parent: NonNullable<EventContext['parent']>): Json {
    return facet(this.context, 'parent', {
      run: { runId: parent.run.runId },
      job: { namespace: parent.run.namespace, name: parent.run.name },
      root: { run: { runId: parent.root.runId }, job: { namespace: parent.root.namespace, name: parent.root.name } },
    });
  }

  /**
   * Every dataset of every event carries its source, the input's and every output's, published or
   * named only: Marquez gives a dataset the source of the first event that names it, for good (a
   * table whose first event was a FAIL without it stayed under `default`), and so does any catalog
   * that reads the source once.
   */
  private dataSource(namespace: string): Json {
    return { dataSource: facet(this.context, 'dataSource', dataSourceOf(namespace)) };
  }

  private inputDataset(end?: LineageTileEnd): Json {
    return {
      ...this.input,
      facets: {
        ...this.dataSource(this.input.namespace),
        ...(end === undefined || end.columns.length === 0 ? {} : { schema: this.schemaFacet(end) }),
      },
    };
  }

  private schemaFacet(end: LineageTileEnd): Json {
    return facet(this.context, 'schema', {
      fields: end.columns.map((column, index) => ({ name: column.header, type: column.type, ordinal_position: index + 1 })),
    });
  }

  /** The targets that hold this run, then the ones it opened and did not publish to (named, with their source only). */
  private outputDatasets(end: LineageTileEnd): Json[] {
    const published = end.outputs.map((output) => {
      const kind = sinkKindOf({ type: output.sink }).lineage;
      const dataset = datasetOf(end, output);
      const bytes = output.details?.bytes;
      return {
        ...dataset,
        facets: { ...this.dataSource(dataset.namespace), ...this.storedFacets(end, output) },
        outputFacets: {
          outputStatistics: facet(this.context, 'outputStatistics', {
            rowCount: output.rows,
            ...(typeof bytes === 'number' ? { size: bytes } : {}),
            ...(kind.filesPerOutput === undefined ? {} : { fileCount: kind.filesPerOutput }),
          }),
        },
      };
    });
    const named = new Set(end.outputs.map((output) => output.target));
    const unpublished = end.opened.filter((writer) => !named.has(writer.target)).map((writer) => this.namedOnly(datasetOf(end, writer)));
    // A try that ended before opening a target still names it (a refused token, page 0 failing),
    // so the failure is found from the dataset it did not write: named only, as an opened one.
    const key = (dataset: Json) => `${String(dataset.namespace)}\u0000${String(dataset.name)}`;
    const known = new Set([...published, ...unpublished].map(key));
    const planned = (end.planned ?? []).flatMap((target) => {
      if (!('dataset' in target) || known.has(key({ ...target.dataset }))) return [];
      known.add(key({ ...target.dataset }));
      return [this.namedOnly(target.dataset)];
    });
    return [...published, ...unpublished, ...planned];
  }

  /** A target the try did not publish to: its name and its source, nothing that would read as data (docs/lineage.md). */
  private namedOnly(dataset: LineageDatasetName): Json {
    return { namespace: dataset.namespace, name: dataset.name, facets: this.dataSource(dataset.namespace) };
  }

  /**
   * An output's schema and column lineage, with its columns as the target stores them (its sink's
   * StoredSchema: a CSV's headers, a table's own types); a writer that does not say (a test's
   * sink): tilehouse's names and types. A kind that cannot tell gives no schema facet.
   */
  private storedFacets(end: LineageTileEnd, output: { sink: LineageTileEnd['opened'][number]['sink']; target: string }): Json {
    if (end.columns.length === 0) return {};
    const stored = end.opened.find((writer) => writer.target === output.target && writer.sink === output.sink)?.schema;
    if (stored !== undefined && 'unknown' in stored) return {};
    const fields = stored?.fields ?? end.columns.map((column) => ({ name: column.name, type: column.type }));
    return {
      schema: facet(this.context, 'schema', { fields: fields.map((field, index) => ({ name: field.name, type: field.type, ordinal_position: index + 1 })) }),
      columnLineage: this.columnLineageFacet(end, fields),
    };
  }

  /** Each output column is the tile column of the same position, typed: a direct copy (the target's own columns after them have none). */
  private columnLineageFacet(end: LineageTileEnd, stored: ReadonlyArray<{ name: string }>): Json {
    const fields: Json = {};
    for (const [index, column] of end.columns.entries()) {
      fields[stored[index]?.name ?? column.name] = {
        inputFields: [
          {
            ...this.input,
            field: column.header,
            transformations: [{ type: 'DIRECT', subtype: 'IDENTITY', description: `the tile column ${column.header} read as ${column.type}` }],
          },
        ],
      };
    }
    return facet(this.context, 'columnLineage', { fields });
  }

  /** tilehouse's own facet (schema/openlineage/TilehouseRunFacet.json). */
  private tilehouseFacet(end: LineageTileEnd): Json {
    const generations = end.outputs.flatMap((output) => {
      const generation = output.details?.generation;
      return generation === undefined ? [] : [{ target: output.target, generation: String(generation) }];
    });
    return {
      _producer: producerOf(this.context.version),
      _schemaURL: TILEHOUSE_FACET_SCHEMA,
      runId: this.start.runId,
      status: end.status,
      rows: end.rows,
      ...(end.error === undefined ? {} : { errorCode: end.error.code }),
      ...(this.start.window === undefined ? {} : { window: { from: this.start.window.from, to: this.start.window.to } }),
      ...(end.guard === undefined
        ? {}
        : {
            guard: {
              tripped: end.guard.tripped,
              overridden: end.guard.overridden,
              // As the run summary has it: what the target held, what this export brought, what changed.
              verdicts: end.guard.verdicts.map(({ target, verdict, rule, reason, held, exported, setting, changedSince }) => ({
                target,
                verdict,
                ...(rule === undefined ? {} : { rule }),
                ...(reason === undefined ? {} : { reason: scrubSecrets(reason) }),
                ...(held === undefined ? {} : { held }),
                ...(exported === undefined ? {} : { exported }),
                ...(setting === undefined ? {} : { setting }),
                ...(changedSince === undefined
                  ? {}
                  : {
                      changedSince: {
                        runId: changedSince.runId,
                        changes: changedSince.changes.map(({ part, details }) => ({ part, ...(details === undefined ? {} : { details: [...details] }) })),
                      },
                    }),
              })),
            },
          }),
      bigqueryJobIds: [...end.bigqueryJobIds],
      objectGenerations: generations,
    };
  }
}

/**
 * A dataset's source (DatasourceDatasetFacet): named by its namespace, as the OpenLineage
 * integrations name it (dbt, Spark: name and uri the namespace), so every producer writing to one
 * store gives a catalog one source. The uri is the namespace when that is an absolute URI (the
 * tenant's origin, `postgres://host:port`, `gs://bucket`, `s3://bucket`); a namespace the naming
 * spec makes a bare scheme (`bigquery`, `file`) is given as that scheme's root, `bigquery:///`,
 * `file:///`: the facet's schema wants a URI (`format: uri`, which needs a scheme and a colon),
 * and Marquez reads the uri of every source it stores.
 */
function dataSourceOf(namespace: string): { name: string; uri: string } {
  return { name: namespace, uri: /^[a-z][a-z0-9+.-]*:/i.test(namespace) ? namespace : `${namespace}:///` };
}

/** A target's dataset: as its writer named it (it knows the server), else as its kind names the target. */
function datasetOf(end: LineageTileEnd, output: { sink: LineageTileEnd['opened'][number]['sink']; target: string }): LineageDatasetName {
  const named = end.opened.find((writer) => writer.target === output.target && writer.sink === output.sink)?.dataset;
  return named ?? sinkKindOf({ type: output.sink }).lineage.dataset(output.target);
}
