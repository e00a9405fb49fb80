import { z } from 'zod';
import { bigqueryIncrementalIssues, bigquerySinkSchema } from './bigquery-sink-schema.js';
import { icebergIncrementalIssues, icebergSinkSchema } from './iceberg-sink-schema.js';
import { csvIncrementalIssues, csvSinkSchema } from './csv-sink-schema.js';
import { parquetIncrementalIssues, parquetSinkSchema } from './parquet-sink-schema.js';
import { postgresIncrementalIssues, postgresSinkSchema } from './postgres-sink-schema.js';
import type { SinkIssue } from './sink-issue.js';

/**
 * The sink kinds as a job file writes them: each kind's config schema and what an incremental job
 * requires of it, one file per kind beside this one (`<kind>-sink-schema.ts`). config/ sits below
 * sinks/ and cannot ask the sink registry (src/sinks/registry.ts), so the union is assembled
 * here, one line per kind, and each kind's descriptor names its schema from here;
 * test/sinks/registry.test.ts checks the two list the same kinds.
 */
export const sinkSchema = z.discriminatedUnion('type', [csvSinkSchema, bigquerySinkSchema, parquetSinkSchema, postgresSinkSchema, icebergSinkSchema]);

export type SinkConfig = z.infer<typeof sinkSchema>;

type IncrementalRule<K extends SinkConfig['type']> = (sink: Extract<SinkConfig, { type: K }>, index: number) => SinkIssue[];

/** What an incremental job requires of each kind, one line per kind. */
const INCREMENTAL_RULES: { [K in SinkConfig['type']]: IncrementalRule<K> } = {
  csv: csvIncrementalIssues,
  bigquery: bigqueryIncrementalIssues,
  parquet: parquetIncrementalIssues,
  postgres: postgresIncrementalIssues,
  iceberg: icebergIncrementalIssues,
};

/** What an incremental job requires of a sink, by its kind. */
export function incrementalSinkIssues(sink: SinkConfig, index: number): SinkIssue[] {
  return (INCREMENTAL_RULES[sink.type] as IncrementalRule<SinkConfig['type']>)(sink, index);
}
