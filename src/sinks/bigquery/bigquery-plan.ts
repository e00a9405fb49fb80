import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import type { LoadIdentity } from './job-id.js';
import type { MergeKey } from './merge-key.js';
import type { SchemaField } from './schema-contract.js';
import type { TableLayout } from './table-layout.js';

/**
 * Everything about where and how one run writes, resolved when the writer opens (see
 * BigQuerySink.loadPlan). A module of its own so that the writer and the steps it calls
 * (readyTarget, inspectTarget, loadIntoStaging) all read it without importing one another.
 */
export interface BigQueryPlan {
  projectId: string;
  datasetId: string;
  /** The table, without decorator. */
  tableId: string;
  /** The publish copy's destination: the table, or `table$YYYYMMDD` in partition mode. */
  destinationTableId: string;
  /** For a new dataset. */
  location: string;
  writeMode: BigQuerySinkConfig['writeMode'];
  schema: BigQuerySinkConfig['schema'];
  /** The columns the run writes, lineage included in append and merge mode. */
  fields: SchemaField[];
  identity: LoadIdentity;
  /** Partitioning and clustering, resolved against the run's columns. */
  layout: TableLayout;
  /** `writeMode: merge`'s key and tie-breaker; absent in the other modes. */
  merge?: MergeKey;
  /** On every job of the run (see jobLabels). */
  labels: Record<string, string>;
}
