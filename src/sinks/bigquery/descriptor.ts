import { bigquerySinkSchema, takesWindows } from '../../config/bigquery-sink-schema.js';
import { ConfigError } from '../../config/config-error.js';
import { guardSettingsOf } from '../../config/publish-guard-schema.js';
import type { SinkKind } from '../sink-kind.js';
import type { ConfigProblem } from '../../config/config-error.js';
import { bigqueryWorkspaceChecker } from './workspace-checks.js';
import { bigqueryLedgerRecorder } from './ledger-recorder.js';
import { bigqueryWindowStateReaders } from './window-state.js';
import { lineageDatasetOfTable } from './table-name.js';

/** The BigQuery sink, as the rest of tilehouse sees it. */
export const bigquerySinkKind: SinkKind = {
  type: 'bigquery',
  label: 'BigQuery',
  configSchema: bigquerySinkSchema,
  // Which table, which rows it keeps (mode, key, partitions and their expiry, new columns or not);
  // not the guard, nor how the table is clustered or must be queried (its rows are the same).
  definitionSettings: {
    decides: ['type', 'table', 'dataset', 'writeMode', 'schema', 'partitionBy', 'partitionExpirationDays', 'primaryKey', 'latestBy'],
    decidesNot: ['guard', 'clusterBy', 'requirePartitionFilter'],
  },
  async build(config, index, job, environment, options) {
    if (config.type !== 'bigquery') throw new Error(`not a BigQuery sink: ${config.type}`);
    const defaults = environment.sinks.bigquery;
    const dataset = config.dataset ?? defaults?.dataset;
    if (dataset === undefined) {
      throw ConfigError.single({
        file: job.file,
        field: `sinks[${index}].dataset`,
        message: 'no dataset: set it here or as sinks.bigquery.dataset in the environment config',
      });
    }
    // Loaded on demand: the BigQuery client adds ~80 ms to every start, which CSV-only
    // deployments should not pay (cold start is measured by the benchmark).
    const { BigQuerySink } = await import('./index.js');
    return new BigQuerySink({
      config,
      defaults: { location: 'US', ...defaults, dataset },
      client: options.bigqueryClient,
      tempDirectory: environment.tempDirectory,
      timezone: job.timezone,
      stopDeadlineMs: environment.stopDeadlineMs,
      credentialsWaitMs: environment.googleCredentialsWaitMs,
      guard: guardSettingsOf(config.guard, defaults?.guard),
    });
  },
  runRecorder: bigqueryLedgerRecorder,
  // BigQuery authenticates as the pod's Google identity (Workload Identity): no secret of its own.
  secrets: () => [],
  workspaceChecker: bigqueryWorkspaceChecker,
  windowStateReaders: (job, _sinks, environment, options, logger) => bigqueryWindowStateReaders(job, environment, options, logger),

  // The write modes that take windows are config's rule (takesWindows), the one the incremental check asks too.
  forWindows(sink, index, job) {
    const problems: ConfigProblem[] = [];
    if (sink.type === 'bigquery' && !takesWindows(sink.writeMode)) {
      problems.push({
        file: job.file,
        field: `sinks[${index}].writeMode`,
        value: JSON.stringify(sink.writeMode),
        message: 'a backfill writes one partition per window, or merges each window by key: use writeMode: partition or merge',
      });
    }
    return { sink, problems };
  },
  // Concurrent MERGEs into one table conflict, and a key two windows hold must end with the later window's values.
  takesWindowsOneAtATime: (sink) => sink.type === 'bigquery' && sink.writeMode === 'merge',
  // The publishing job (copy, query or merge) first, then the load into the staging table.
  // A partition's target is `table$YYYYMMDD`: its dataset is the table.
  lineage: { dataset: lineageDatasetOfTable },
  jobIdsOf: (result) =>
    ['jobId', 'loadJobId'].flatMap((key) => {
      const id = result.details?.[key];
      return typeof id === 'string' && id !== '' ? [id] : [];
    }),
  // The run ledger is where a BigQuery sink's finished windows are read from.
  resumeRefusal(job, environment) {
    if (job.sinks.some((sink) => sink.type === 'bigquery') && environment.sinks.bigquery?.runLedger === false) {
      return 'backfill: --resume reads the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off';
    }
    return undefined;
  },
};
