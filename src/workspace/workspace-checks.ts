import path from 'node:path';
import type { ConfigProblem } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { formatFieldPath, lineOf } from '../config/read-yaml.js';
import { cronJobFor } from '../deploy/job-manifests.js';
import { ConfigError } from '../config/config-error.js';
import { isTilehouseError } from '../errors.js';
import type { Column } from '../transform/column.js';
import { toColumns } from '../transform/columns.js';
import { workspaceCheckers, type WorkspaceProblem } from '../sinks/registry.js';
import { buildSinks, type SinkFactoryOptions } from '../sinks/build-sinks.js';
import { uncheckedCredentials } from '../config/secrets.js';
import type { Workspace } from './load-workspace.js';
import { countNoun } from '../count-noun.js';
import { storeKindOf } from '../sinks/registry.js';
import { unwritableReason } from '../sinks/writable-directory.js';

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
  /** The sink kinds' secrets that cannot be resolved here (a PostgreSQL password's variable unset): `validate`'s "not checked" lines. */
  sinkSecretsUnchecked: ConfigProblem[];
}

type Located = WorkspaceProblem;

async function located(problem: Located): Promise<ConfigProblem> {
  const result: ConfigProblem = { file: problem.file, field: formatFieldPath(problem.path), message: problem.message };
  const line = await lineOf(problem.file, problem.path);
  if (line !== undefined) result.line = line;
  if (problem.value !== undefined) result.value = JSON.stringify(problem.value);
  return result;
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
    return toColumns(
      visible.map((item) => item.header),
      visible.map((item) => item.dataType),
      job.columns,
    ).columns;
  } catch (error) {
    if (isTilehouseError(error)) return undefined;
    throw error;
  }
}

export async function checkWorkspace(environment: EnvironmentConfig, configFile: string, jobs: readonly LoadedJob[]): Promise<WorkspaceFindings> {
  const errors: Located[] = [];
  const fileSystem: Located[] = [];
  const columnLayout: Located[] = [];
  const warnings: Located[] = [];
  const checkers = await workspaceCheckers(environment, configFile, jobs);
  for (const checker of checkers.values()) fileSystem.push(...checker.fileSystem);
  for (const checker of checkers.values()) errors.push(...(checker.invalid ?? []));
  const sinkSecretsUnchecked = [...checkers.values()].flatMap((checker) => checker.unchecked ?? []);

  const targets = new Map<string, { job: LoadedJob; index: number }>();
  for (const job of jobs) {
    let predicted: { columns: readonly Column[] | undefined } | undefined;
    const columnsOf = () => (predicted ??= { columns: predictedColumns(job) }).columns;
    for (const [index, sink] of job.sinks.entries()) {
      const target = await checkers.get(sink.type)!.target(job, index, sink, columnsOf);
      if (target === undefined) continue;
      fileSystem.push(...target.fileSystem);
      columnLayout.push(...target.columnLayout);
      const key = `${sink.type} ${target.name}`;
      const other = targets.get(key);
      if (other === undefined) {
        targets.set(key, { job, index });
        continue;
      }
      const where = other.job === job ? `sinks[${other.index}] of this job` : `job ${other.job.name} (${other.job.file})`;
      errors.push({
        file: job.file,
        path: ['sinks', index, target.field],
        value: target.value,
        message: `${target.name} is also written by ${where}; each run would replace the other's output`,
      });
    }

    for (const checker of checkers.values()) errors.push(...checker.jobErrors(job));
    warnings.push(...scheduleWarnings(job), ...pageSizeWarnings(job, environment, configFile), ...unorderedQueryWarnings(job));
  }
  warnings.push(...(await historyWarnings(environment, configFile)));
  return {
    errors: await Promise.all(errors.map(located)),
    fileSystem: await Promise.all(fileSystem.map(located)),
    columnLayout: await Promise.all(columnLayout.map(located)),
    warnings: await Promise.all(warnings.map(located)),
    sinkSecretsUnchecked: await Promise.all(sinkSecretsUnchecked.map(located)),
  };
}

/**
 * A local history directory no run can write here. A warning, not an error: a run without its
 * record still exports (it logs history_unavailable), but `status` then has no night to show.
 */
async function historyWarnings(environment: EnvironmentConfig, configFile: string): Promise<Located[]> {
  const { location } = environment.history;
  if (!storeKindOf(location).onThisMachine) return [];
  const reason = await unwritableReason(path.resolve(path.dirname(configFile), location));
  if (reason === undefined) return [];
  return [
    {
      file: configFile,
      path: ['history', 'location'],
      value: location,
      message: `${reason}: every run would log history_unavailable and keep no record for tilehouse status; make it writable or set gs://bucket/prefix or s3://bucket/prefix`,
    },
  ];
}

/** A schedule `tilehouse schedule` runs but a Kubernetes CronJob cannot take. */
function scheduleWarnings(job: LoadedJob): Located[] {
  if (job.schedule === undefined) return [];
  try {
    cronJobFor(job, NO_POD);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const cron = job.schedule.cron;
    return error.problems.map((problem) => ({
      file: job.file,
      path: problem.field.split('.'),
      value: cron,
      message: `tilehouse schedule runs it, but tilehouse k8s refuses it: ${problem.message}`,
    }));
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
/** What `validate` finds: the checks across files, and the secrets it could not check here. */
export interface ValidationFindings extends WorkspaceFindings {
  /** Secret references whose variable is not set or whose file is not readable here: never read, only reported. */
  unchecked: ConfigProblem[];
}

/**
 * Everything `validate` decides without the network, in its order: the secrets it cannot check
 * here (no secret value is read), each job's sinks built (a sink that cannot be built is a
 * configuration error, thrown as it comes), then the checks across files (`checkWorkspace`).
 */
export async function validateWorkspace(workspace: Workspace, env: NodeJS.ProcessEnv, sinkOptions?: SinkFactoryOptions): Promise<ValidationFindings> {
  const unchecked = await uncheckedCredentials(workspace.environment.source, workspace.configFile, env);
  for (const job of workspace.jobs) await buildSinks(job, workspace.environment, sinkOptions);
  const findings = await checkWorkspace(workspace.environment, workspace.configFile, workspace.jobs);
  return { ...findings, unchecked: [...unchecked, ...findings.sinkSecretsUnchecked] };
}

export async function refuseConflictingTargets(environment: EnvironmentConfig, configFile: string, jobs: readonly LoadedJob[]): Promise<void> {
  const { errors } = await checkWorkspace(environment, configFile, jobs);
  if (errors.length > 0) throw new ConfigError(errors);
}
