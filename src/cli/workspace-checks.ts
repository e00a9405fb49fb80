import path from 'node:path';
import type { ConfigProblem } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { formatFieldPath, lineOf } from '../config/read-yaml.js';
import { cronJobFor } from '../deploy/job-manifests.js';
import { ConfigError } from '../config/config-error.js';
import { CsvPathTemplate, defaultCsvPathTemplate, isGcsTarget, toFileNameSafe } from '../sinks/csv/csv-path.js';
import { looksLikeGcsUrl } from '../config/gcs-url.js';
import { BigQueryLayoutError } from '../sinks/bigquery/bigquery-errors.js';
import { resolveTableLayout } from '../sinks/bigquery/table-layout.js';
import { resolveMergeKey } from '../sinks/bigquery/merge-key.js';
import type { BigQuerySinkConfig } from '../config/job-schema.js';
import { isTilehouseError } from '../errors.js';
import type { Column } from '../transform/column.js';
import { toColumns } from '../transform/columns.js';
import { unwritableReason } from '../sinks/writable-directory.js';
import { countNoun } from '../count-noun.js';

/**
 * Checks across files that need no network, beyond what each file's schema can say:
 * - errors: a CSV output directory that is a file or not writable; two sinks (of any jobs)
 *   writing the same CSV path or BigQuery table; a BigQuery `partitionBy` / `clusterBy` /
 *   `primaryKey` / `latestBy` column the query's visible items do not give, or of a type BigQuery
 *   cannot partition or cluster by;
 * - warnings: a schedule a Kubernetes CronJob cannot take (`tilehouse schedule` runs it, `tilehouse
 *   k8s` refuses it), a job's query.options.itemsPerPage that differs from source.itemsPerPage
 *   (the environment's value is what every request asks for), a query that may span pages with
 *   no item carrying an `order`.
 */
export interface WorkspaceFindings {
  /** Mistakes in the files themselves (two sinks on one target): no run can succeed with them. */
  errors: ConfigProblem[];
  /**
   * The machine as it is now (a directory that is a file or not writable): `validate` reports
   * them as errors, while a run finds them per job at write time (permission_denied), so one
   * unwritable target fails its job and the others still run.
   */
  fileSystem: ConfigProblem[];
  /**
   * BigQuery partition and cluster columns checked against the columns the job's files predict
   * (see predictedColumns): `validate` reports them as errors, while a run checks them against
   * page 0's real columns and fails only that job (bigquery_partition_column_invalid, ...).
   */
  columnLayout: ConfigProblem[];
  warnings: ConfigProblem[];
}

interface Located {
  file: string;
  path: PropertyKey[];
  value?: unknown;
  message: string;
}

async function located(problem: Located): Promise<ConfigProblem> {
  const result: ConfigProblem = { file: problem.file, field: formatFieldPath(problem.path), message: problem.message };
  const line = await lineOf(problem.file, problem.path);
  if (line !== undefined) result.line = line;
  if (problem.value !== undefined) result.value = JSON.stringify(problem.value);
  return result;
}

/** A CSV path template with what is known before a run filled in ({name}, {tile}), as an absolute path. */
function csvTargetKey(template: string, job: LoadedJob, directory: string): string {
  const filled = template.replaceAll('{name}', toFileNameSafe(job.name)).replaceAll('{tile}', toFileNameSafe(job.tile));
  // Cloud Storage objects: the URL is the key (node:path would make `<cwd>/gs:/…` of it).
  if (isGcsTarget(filled)) return filled;
  if (looksLikeGcsUrl(directory) && !path.isAbsolute(filled)) return `${directory.replace(/\/+$/, '')}/${filled}`;
  return path.isAbsolute(filled) ? path.resolve(filled) : path.resolve(directory, filled);
}

const NO_POD = { spec: () => ({}), warnings: [] };

/**
 * The columns a job's export will have, as far as its file says: the visible query items' headers
 * and dataTypes with the job's `columns` overrides, typed as a run types page 0's. Undefined when
 * they cannot be derived (the override problem is reported by the job's schema).
 */
function predictedColumns(job: LoadedJob): readonly Column[] | undefined {
  const visible = job.query.items.filter((item) => item.hidden !== true);
  try {
    return toColumns(visible.map((item) => item.header), visible.map((item) => item.dataType), job.columns).columns;
  } catch (error) {
    if (isTilehouseError(error)) return undefined;
    throw error;
  }
}

/**
 * The run's own checks of `partitionBy` and `clusterBy` (resolveTableLayout) and of merge's
 * `primaryKey` and `latestBy` (resolveMergeKey), against the predicted columns; partitioning,
 * clustering and the key are checked apart, so a bad column in each is reported.
 */
function columnLayoutProblems(job: LoadedJob, index: number, sink: BigQuerySinkConfig, columns: readonly Column[], dataset: string): Located[] {
  const where = { jobName: job.name, sink: `bigquery ${dataset}.${sink.table ?? job.name}` };
  const { clusterBy: _clusterBy, ...partitioning } = sink;
  const { partitionBy: _partitionBy, ...clustering } = sink;
  const problems: Located[] = [];
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

export async function checkWorkspace(environment: EnvironmentConfig, configFile: string, jobs: readonly LoadedJob[]): Promise<WorkspaceFindings> {
  const errors: Located[] = [];
  const fileSystem: Located[] = [];
  const columnLayout: Located[] = [];
  const warnings: Located[] = [];
  const csvDirectory = environment.sinks.csv.directory;
  const usesCsv = jobs.some((job) => job.sinks.some((sink) => sink.type === 'csv'));
  // A gs:// directory is checked by its URL (the environment schema) and by `check` (the bucket).
  const directoryReason = usesCsv && !looksLikeGcsUrl(csvDirectory) ? await unwritableReason(csvDirectory) : undefined;
  if (directoryReason !== undefined) fileSystem.push({ file: configFile, path: ['sinks', 'csv', 'directory'], value: csvDirectory, message: `CSV files cannot be written there: ${directoryReason}` });

  const targets = new Map<string, { job: LoadedJob; index: number }>();
  for (const job of jobs) {
    const columns = job.sinks.some((sink) => sink.type === 'bigquery' && (sink.partitionBy !== undefined || sink.clusterBy !== undefined || sink.primaryKey !== undefined)) ? predictedColumns(job) : undefined;
    for (const [index, sink] of job.sinks.entries()) {
      let key: string;
      if (sink.type === 'csv') {
        const template = sink.path ?? defaultCsvPathTemplate(sink.gzip);
        key = `csv ${csvTargetKey(template, job, csvDirectory)}`;
        let scope: string;
        try {
          scope = new CsvPathTemplate(template).sweepScope(csvDirectory).root;
        } catch {
          continue; // a bad template is reported when the sinks are built
        }
        if (directoryReason === undefined && !isGcsTarget(scope) && (looksLikeGcsUrl(csvDirectory) || path.resolve(scope) !== path.resolve(csvDirectory))) {
          const reason = await unwritableReason(scope);
          if (reason !== undefined) fileSystem.push({ file: job.file, path: ['sinks', index, 'path'], value: template, message: `CSV files cannot be written there: ${reason}` });
        }
      } else {
        const dataset = sink.dataset ?? environment.sinks.bigquery?.dataset ?? '';
        key = `bigquery ${environment.sinks.bigquery?.projectId ?? '(default project)'}.${dataset}.${sink.table ?? job.name}`;
        if (columns !== undefined) columnLayout.push(...columnLayoutProblems(job, index, sink, columns, dataset));
      }
      const other = targets.get(key);
      if (other === undefined) {
        targets.set(key, { job, index });
        continue;
      }
      const where = other.job === job ? `sinks[${other.index}] of this job` : `job ${other.job.name} (${other.job.file})`;
      errors.push({
        file: job.file,
        path: ['sinks', index, sink.type === 'csv' ? 'path' : 'table'],
        value: sink.type === 'csv' ? (sink.path ?? defaultCsvPathTemplate(sink.gzip)) : (sink.table ?? job.name),
        message: `${key.replace(/^\w+ /, '')} is also written by ${where}; each run would replace the other's output`,
      });
    }

    const ledgerProblem = incrementalWithoutLedger(job, environment, configFile);
    if (ledgerProblem !== undefined) errors.push(ledgerProblem);
    warnings.push(...scheduleWarnings(job), ...pageSizeWarnings(job, environment, configFile), ...unorderedQueryWarnings(job));
  }
  return {
    errors: await Promise.all(errors.map(located)),
    fileSystem: await Promise.all(fileSystem.map(located)),
    columnLayout: await Promise.all(columnLayout.map(located)),
    warnings: await Promise.all(warnings.map(located)),
  };
}

/** The ledger is the only place an incremental BigQuery sink's finished days can be read from. */
function incrementalWithoutLedger(job: LoadedJob, environment: EnvironmentConfig, configFile: string): Located | undefined {
  if (job.incremental === undefined || environment.sinks.bigquery?.runLedger !== false) return undefined;
  const index = job.sinks.findIndex((sink) => sink.type === 'bigquery');
  if (index < 0) return undefined;
  return { file: job.file, path: ['incremental'], message: `an incremental job reads the days sinks[${index}] published from the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off (${configFile})` };
}

/** A schedule `tilehouse schedule` runs but a Kubernetes CronJob cannot take. */
function scheduleWarnings(job: LoadedJob): Located[] {
  if (job.schedule === undefined) return [];
  try {
    cronJobFor(job, NO_POD);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const cron = job.schedule.cron;
    return error.problems.map((problem) => ({ file: job.file, path: problem.field.split('.'), value: cron, message: `tilehouse schedule runs it, but tilehouse k8s refuses it: ${problem.message}` }));
  }
  return [];
}

/** A job's query.options.itemsPerPage that the environment's source.itemsPerPage overrides. */
function pageSizeWarnings(job: LoadedJob, environment: EnvironmentConfig, configFile: string): Located[] {
  const jobPageSize = job.query.options.itemsPerPage;
  if (jobPageSize === undefined || jobPageSize === environment.source.itemsPerPage) return [];
  return [
    {
      file: job.file,
      path: ['query', 'options', 'itemsPerPage'],
      value: jobPageSize,
      message: `ignored: every request asks for source.itemsPerPage = ${countNoun(environment.source.itemsPerPage, 'row')} (${configFile}); remove it or make the two equal`,
    },
  ];
}

/**
 * Offset paging continues page N−1 with page N only if the source sorts every request the same
 * way; a query that states no order leaves that to the source, and a source that varies it
 * moves rows across pages with every count adding up. A query with aggregates and nothing
 * grouped is one row, one page: order cannot matter there.
 */
function unorderedQueryWarnings(job: LoadedJob): Located[] {
  const { items } = job.query;
  const oneRow = items.some((item) => item.aggregate !== undefined) && !items.some((item) => item.grouped === true);
  if (oneRow || items.some((item) => item.order !== undefined)) return [];
  return [
    {
      file: job.file,
      path: ['query', 'items'],
      value: `${countNoun(items.length, 'item')} without order`,
      message:
        'rows have no stated order; pages may overlap or skip rows if the source orders them differently per request; add `order: asc` to a unique number or datetime item',
    },
  ];
}

/** For commands that write: mistakes in the files refuse the run before anything is fetched. */
export async function refuseConflictingTargets(environment: EnvironmentConfig, configFile: string, jobs: readonly LoadedJob[]): Promise<void> {
  const { errors } = await checkWorkspace(environment, configFile, jobs);
  if (errors.length > 0) throw new ConfigError(errors);
}

