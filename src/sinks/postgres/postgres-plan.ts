import type { PostgresSinkConfig } from '../../config/postgres-sink-schema.js';
import { postgresIdentifierProblem } from '../../config/postgres-sink-schema.js';
import type { Column } from '../../transform/column.js';
import type { ColumnType } from '../../value-types/column-types.js';
import type { SinkWindow } from '../sink.js';
import { PostgresColumnError } from './postgres-errors.js';
import { POSTGRES_TYPES, qualifiedName } from './sql-names.js';

/**
 * Lineage columns, as on BigQuery: in `append`, which run added a row and when its extraction
 * started; in `merge`, which run last changed it. A replaced table or range is one run by design.
 */
export const LINEAGE_COLUMNS = [
  { name: '_run_id', type: 'STRING' },
  { name: '_extracted_at', type: 'TIMESTAMP' },
] as const satisfies ReadonlyArray<{ name: string; type: ColumnType }>;

export interface PlannedColumn {
  name: string;
  type: ColumnType;
  /** The PostgreSQL type tilehouse creates it as. */
  postgresType: string;
}

/** What a run writes where, resolved from the sink's config and the tile's columns before anything is sent. */
export interface PostgresPlan {
  jobName: string;
  schema: string;
  table: string;
  /** `schema.table` as messages and the summary name it. */
  target: string;
  /** `"schema"."table"`, for statements. */
  sqlTarget: string;
  writeMode: PostgresSinkConfig['writeMode'];
  contract: PostgresSinkConfig['schema'];
  /** The tile's columns, in its order (what COPY sends). */
  columns: PlannedColumn[];
  /** Whether the table carries the lineage columns (append, merge): filled in by the publish. */
  lineage: boolean;
  merge?: { keys: string[]; latestBy?: string };
  partition?: { column: string; type: 'DATE' | 'TIMESTAMP' };
  window?: SinkWindow;
  /** The job's IANA zone: the days of a TIMESTAMP partition column. */
  timezone: string;
}

/** The sink's target `schema.table` before a run: the job name when no table is set. */
export function configuredTarget(config: PostgresSinkConfig, defaultSchema: string, jobName: string): { schema: string; table: string } {
  return { schema: config.postgresSchema ?? defaultSchema, table: config.table ?? jobName };
}

/** A column named by output name or header, as the other kinds take `primaryKey` and `partitionBy`. */
function columnNamed(columns: readonly Column[], reference: string): Column | undefined {
  return columns.find((column) => column.name === reference) ?? columns.find((column) => column.header === reference);
}

export function resolvePlan(
  config: PostgresSinkConfig,
  context: { jobName: string; columns: readonly Column[]; window?: SinkWindow | undefined },
  defaults: { schema: string; timezone: string },
): PostgresPlan {
  const { schema, table } = configuredTarget(config, defaults.schema, context.jobName);
  const target = `${schema}.${table}`;
  const fail = (field: string, column: string, problem: string) => new PostgresColumnError(context.jobName, target, field, column, problem);
  const lineage = config.writeMode === 'append' || config.writeMode === 'merge';
  for (const column of context.columns) {
    const problem = postgresIdentifierProblem(column.name);
    if (problem !== undefined) throw fail('column', column.name, problem);
    if (lineage && LINEAGE_COLUMNS.some((own) => own.name === column.name))
      throw fail('column', column.name, `is a lineage column writeMode ${config.writeMode} adds itself; rename it in the job's columns`);
  }
  const plan: PostgresPlan = {
    jobName: context.jobName,
    schema,
    table,
    target,
    sqlTarget: qualifiedName(schema, table),
    writeMode: config.writeMode,
    contract: config.schema,
    columns: context.columns.map((column) => ({ name: column.name, type: column.type, postgresType: POSTGRES_TYPES[column.type] })),
    lineage,
    timezone: defaults.timezone,
    ...(context.window ? { window: context.window } : {}),
  };
  if (config.primaryKey !== undefined) {
    const keys = config.primaryKey.map((reference, index) => {
      const found = columnNamed(context.columns, reference);
      if (found === undefined) throw fail(`primaryKey[${index}]`, reference, 'is not a column of the tile');
      if (found.type === 'FLOAT64') throw fail(`primaryKey[${index}]`, reference, 'is FLOAT64, which cannot identify a row exactly');
      return found.name;
    });
    let latestBy: string | undefined;
    if (config.latestBy !== undefined) {
      const found = columnNamed(context.columns, config.latestBy);
      if (found === undefined) throw fail('latestBy', config.latestBy, 'is not a column of the tile');
      latestBy = found.name;
    }
    plan.merge = { keys, ...(latestBy === undefined ? {} : { latestBy }) };
  }
  if (config.partitionBy !== undefined) {
    const found = columnNamed(context.columns, config.partitionBy.column);
    if (found === undefined) throw fail('partitionBy.column', config.partitionBy.column, 'is not a column of the tile');
    if (found.type !== 'DATE' && found.type !== 'TIMESTAMP')
      throw fail('partitionBy.column', config.partitionBy.column, `is ${found.type}; a partition column is DATE or TIMESTAMP`);
    plan.partition = { column: found.name, type: found.type };
  }
  return plan;
}

/** Every column the table holds for this plan: the tile's, then the lineage columns. */
export function tableColumns(plan: PostgresPlan): PlannedColumn[] {
  return [...plan.columns, ...(plan.lineage ? LINEAGE_COLUMNS.map((column) => ({ ...column, postgresType: POSTGRES_TYPES[column.type] })) : [])];
}
