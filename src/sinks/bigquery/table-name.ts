import type { BigQuerySinkConfig } from '../../config/bigquery-sink-schema.js';
import type { LineageDatasetName } from '../lineage-dataset-name.js';

/** Where a BigQuery table lives; a project that Application Default Credentials have not named yet is undefined. */
export interface TableAddress {
  projectId: string | undefined;
  datasetId: string;
  tableId: string;
}

// The client's project before Application Default Credentials resolved it (the client library's placeholder).
export const UNRESOLVED_PROJECT = '{{projectId}}';

/** What a name shows for a project that only Application Default Credentials will name, at run time. */
const DEFAULT_PROJECT = '(default project)';

/**
 * `project.dataset.table`, the one way tilehouse names a BigQuery table: targets in summaries and
 * the run ledger, messages, and SQL (quoted by the caller). A partition is named by its table id
 * (`table$YYYYMMDD`). Nothing parses a name back: whoever needs a part keeps the address.
 */
export function tableName(address: TableAddress): string {
  return `${datasetName(address)}.${address.tableId}`;
}

/** `project.dataset`, for what is said of a dataset (its creation, its access, its run ledger). */
export function datasetName(address: Pick<TableAddress, 'projectId' | 'datasetId'>): string {
  return `${address.projectId ?? DEFAULT_PROJECT}.${address.datasetId}`;
}

/** How a layout or key problem names the sink it is about: `bigquery dataset.table`, as the job file says it. */
export function sinkLabel(address: Pick<TableAddress, 'datasetId' | 'tableId'>): string {
  return `bigquery ${address.datasetId}.${address.tableId}`;
}

/**
 * The table a BigQuery sink of job `jobName` writes, by its config and the environment's defaults,
 * before a run resolves anything (`validate`, `plan`'s refusals, window state, the run ledger of
 * a run that failed before its writers opened); `projectId` only when the environment names it.
 */
export function configuredTable(
  sink: Pick<BigQuerySinkConfig, 'dataset' | 'table'>,
  defaults: { projectId?: string | undefined; dataset?: string | undefined } | undefined,
  jobName: string,
): TableAddress {
  return { projectId: defaults?.projectId, datasetId: sink.dataset ?? defaults?.dataset ?? '', tableId: sink.table ?? jobName };
}

/**
 * A table's OpenLineage dataset, as the naming spec gives it (`bigquery` / `project.dataset.table`):
 * a written target's partition decorator dropped (a partition is a version of its table, not a
 * dataset). The kind's `lineage` and the sink's planned dataset both name it here, so they agree.
 */
export function lineageDatasetOfTable(target: string): LineageDatasetName {
  return { namespace: 'bigquery', name: target.replace(/\$.*$/, '') };
}
