import type { BigQuerySinkConfig } from '../../config/job-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { Column } from '../../transform/column.js';
import type { SinkWorkspaceChecker, WorkspaceCheckerFactory, WorkspaceProblem } from '../workspace-checks.js';
import { BigQueryLayoutError } from './bigquery-errors.js';
import { resolveMergeKey } from './merge-key.js';
import { resolveTableLayout } from './table-layout.js';
import { configuredTable, sinkLabel, tableName, type TableAddress } from './table-name.js';

/**
 * The run's own checks of `partitionBy` and `clusterBy` (resolveTableLayout) and of merge's
 * `primaryKey` and `latestBy` (resolveMergeKey), against the predicted columns; partitioning,
 * clustering and the key are checked apart, so a bad column in each is reported.
 */
function columnLayoutProblems(job: LoadedJob, index: number, sink: BigQuerySinkConfig, columns: readonly Column[], table: TableAddress): WorkspaceProblem[] {
  const where = { jobName: job.name, sink: sinkLabel(table) };
  const { clusterBy: _clusterBy, ...partitioning } = sink;
  const { partitionBy: _partitionBy, ...clustering } = sink;
  const problems: WorkspaceProblem[] = [];
  const checks: (() => unknown)[] = [
    () => resolveTableLayout(partitioning, columns, where),
    () => resolveTableLayout(clustering, columns, where),
    () => resolveMergeKey(sink, columns, where),
  ];
  for (const check of checks) {
    try {
      check();
    } catch (error) {
      if (!(error instanceof BigQueryLayoutError)) throw error;
      problems.push({ file: job.file, path: ['sinks', index, ...error.path], value: error.value, message: error.reason });
    }
  }
  return problems;
}

/**
 * The BigQuery sink's checks without the network: the target is project.dataset.table; the
 * partition, cluster and key columns are checked against the columns the job's files predict
 * (a run checks them against page 0's real columns); an incremental job needs the run ledger.
 */
export const bigqueryWorkspaceChecker: WorkspaceCheckerFactory = async (environment, configFile): Promise<SinkWorkspaceChecker> => ({
  fileSystem: [],
  async target(job, index, sink, predictedColumns) {
    if (sink.type !== 'bigquery') return undefined;
    const table = configuredTable(sink, environment.sinks.bigquery, job.name);
    const name = tableName(table);
    const laidOut = job.sinks.some(
      (other) => other.type === 'bigquery' && (other.partitionBy !== undefined || other.clusterBy !== undefined || other.primaryKey !== undefined),
    );
    const columns = laidOut ? predictedColumns() : undefined;
    const columnLayout = columns === undefined ? [] : columnLayoutProblems(job, index, sink, columns, table);
    return { name, field: 'table', value: table.tableId, fileSystem: [], columnLayout };
  },
  // The ledger is the only place an incremental BigQuery sink's finished days can be read from.
  jobErrors(job) {
    if (job.incremental === undefined || environment.sinks.bigquery?.runLedger !== false) return [];
    const index = job.sinks.findIndex((sink) => sink.type === 'bigquery');
    if (index < 0) return [];
    return [
      {
        file: job.file,
        path: ['incremental'],
        message: `an incremental job reads the days sinks[${index}] published from the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off (${configFile})`,
      },
    ];
  },
});
