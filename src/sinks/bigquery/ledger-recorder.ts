import type { BigQuery } from '@google-cloud/bigquery';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { Logger } from '../../log.js';
import { messageOf } from '../../errors.js';
import { cleanupDeadline } from '../../stop-deadline.js';
import type { RecordedTile, RunRecorder, SinkFactoryOptions } from '../sink-kind.js';
import type { LedgerRow } from './run-ledger.js';
import { configuredTable, datasetName, tableName, UNRESOLVED_PROJECT, type TableAddress } from './table-name.js';

export interface Target {
  projectId: string;
  datasetId: string;
  target: string;
  published: boolean;
  /** What the sink says the target took (for an adopted job, what that job published). */
  rows?: number;
  /** Rows the sink published into partitions already past the table's expiration (not in `rows`). */
  expiredRows?: number | undefined;
  details?: Record<string, string | number | boolean> | undefined;
}

/**
 * The run ledger (`_tilehouse_runs`, see run-ledger.ts) for the jobs that
 * have a BigQuery sink, unless the environment turns it off (sinks.bigquery.runLedger: false).
 * Appended after each tile's publish; a ledger that cannot be written is logged as an error and
 * does not change the run's outcome (its targets hold what the summary says).
 */
export async function bigqueryLedgerRecorder(
  jobs: readonly LoadedJob[],
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
  /** The stop: a ledger row after it is still tried, but only until the cleanup's deadline. */
  signal?: AbortSignal,
): Promise<RunRecorder | undefined> {
  const defaults = environment.sinks.bigquery;
  if (defaults?.runLedger === false || !jobs.some((job) => job.sinks.some((sink) => sink.type === 'bigquery'))) return undefined;
  // Loaded on demand, as build-sinks does: CSV-only runs do not pay for the BigQuery client.
  const { createBigQueryClient } = await import('./bigquery-client.js');
  const ledger = await import('./run-ledger.js');
  const client: BigQuery =
    options.bigqueryClient ??
    createBigQueryClient(defaults?.projectId, process.env, { apiEndpoint: defaults?.apiEndpoint, credentialsWaitMs: environment.googleCredentialsWaitMs });
  const deadline = cleanupDeadline(signal, environment.stopDeadlineMs);
  const retry = {
    limits: ledger.LEDGER_RETRY_LIMITS,
    logger,
    ...(defaults?.requestTimeoutMs ? { requestTimeoutMs: defaults.requestTimeoutMs } : {}),
    ...(deadline ? { signal: deadline } : {}),
  };

  const targets = new LedgerTargets(jobs, defaults, client);
  return async (tile, window) => {
    for (const target of await targets.of(tile)) {
      const jobId = target.details?.jobId;
      const loadJobId = target.details?.loadJobId;
      const row: LedgerRow = {
        runId: tile.runId,
        job: tile.job,
        tile: tile.tile,
        target: target.target,
        status: tile.status,
        published: target.published,
        rows: target.published ? (target.rows ?? tile.rows) : 0,
        window: window === undefined ? undefined : { from: window.from, to: window.to },
        windowOpen: window?.open,
        expiredRows: target.published ? target.expiredRows : undefined,
        schemaHash: tile.columns.length > 0 ? ledger.schemaHashOf(tile.columns) : undefined,
        jobId: typeof jobId === 'string' ? jobId : undefined,
        loadJobId: typeof loadJobId === 'string' ? loadJobId : undefined,
        errorCode: tile.error?.code,
        publishGuard: guardOf(tile, target.target),
        definition: tile.definition === undefined ? undefined : JSON.stringify(tile.definition),
        startedAt: tile.startedAt ?? new Date(Date.now() - tile.durationMs),
        durationMs: tile.durationMs,
      };
      try {
        await ledger.appendLedgerRow(client, { projectId: target.projectId, datasetId: target.datasetId, location: defaults?.location }, row, retry);
      } catch (error) {
        logger.error(
          { err: messageOf(error), target: target.target },
          `job ${tile.job}: the run ledger (${ledger.RUN_LEDGER_TABLE}) of ${datasetName(target)} could not be appended to: ${messageOf(error)}`,
        );
      }
    }
  };
}

/**
 * The ledger rows' targets of a tile run: the tables of the job's BigQuery sinks, named as the
 * sinks name them (tableName), matched against what the run published and opened (a partition
 * of one counts as it); when it opened none of them (a refused token), every table the job's
 * config names, if the project is known without asking ADC. A name is compared, never parsed.
 */
export class LedgerTargets {
  private adcProject: Promise<string | undefined> | undefined;

  constructor(
    private readonly jobs: readonly LoadedJob[],
    private readonly defaults: EnvironmentConfig['sinks']['bigquery'],
    private readonly client: BigQuery,
  ) {}

  async of(tile: RecordedTile): Promise<Target[]> {
    const found = new Map<string, Target>();
    const opened = [...(tile.unpublished ?? []), ...tile.targets, ...(tile.attempted ?? [])];
    const projectId = tile.outputs.length + opened.length === 0 ? undefined : await this.writtenProject();
    if (projectId !== undefined) {
      const tables = this.tablesOf(tile.job, projectId);
      const tableOf = (target: string) => tables.find((table) => target === tableName(table) || target.startsWith(`${tableName(table)}$`));
      for (const output of tile.outputs) {
        const table = tableOf(output.target);
        if (table)
          found.set(output.target, {
            projectId,
            datasetId: table.datasetId,
            target: output.target,
            published: true,
            rows: output.rows,
            expiredRows: output.expiredRows,
            details: output.details,
          });
      }
      for (const target of opened) {
        const table = tableOf(target);
        if (table && !found.has(target)) found.set(target, { projectId, datasetId: table.datasetId, target, published: false });
      }
    }
    const known = this.knownProject();
    if (found.size === 0 && known !== undefined) {
      for (const table of this.tablesOf(tile.job, known))
        found.set(tableName(table), { projectId: known, datasetId: table.datasetId, target: tableName(table), published: false });
    }
    return [...found.values()];
  }

  /** The project the environment names, or the one the client already resolved (asking ADC is a request). */
  private knownProject(): string | undefined {
    return this.defaults?.projectId ?? (this.client.projectId !== UNRESOLVED_PROJECT ? this.client.projectId : undefined);
  }

  /** The project the sinks wrote to: the known one, else the one ADC names (asked once). */
  private writtenProject(): Promise<string | undefined> {
    const known = this.knownProject();
    if (known !== undefined) return Promise.resolve(known);
    this.adcProject ??= this.client.getProjectId().catch(() => undefined);
    return this.adcProject;
  }

  private tablesOf(job: string, projectId: string): TableAddress[] {
    return (this.jobs.find((candidate) => candidate.name === job)?.sinks ?? [])
      .flatMap((sink) => (sink.type === 'bigquery' ? [{ ...configuredTable(sink, this.defaults, job), projectId }] : []))
      .filter((table) => table.datasetId !== '');
  }
}

/** A target's publish guard verdict as the ledger's publish_guard column says it (a partition's is its table's). */
export function guardOf(tile: RecordedTile, target: string): string | undefined {
  const verdict = tile.guard?.verdicts.find(
    (candidate) => candidate.target === target || target.startsWith(`${candidate.target}$`) || candidate.target.startsWith(`${target}$`),
  );
  if (verdict === undefined) return undefined;
  if (verdict.verdict === 'trip') return `${tile.guard!.overridden ? 'overridden' : 'tripped'}:${verdict.rule ?? ''}`;
  return verdict.verdict;
}
