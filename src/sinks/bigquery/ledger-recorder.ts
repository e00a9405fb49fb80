import type { BigQuery } from '@google-cloud/bigquery';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { Logger } from '../../log.js';
import { messageOf } from '../../errors.js';
import { cleanupDeadline } from '../../stop-deadline.js';
import type { SinkFactoryOptions } from '../build-sinks.js';
import type { RecordedTile, RunRecorder } from '../sink-kind.js';
import type { LedgerRow } from './run-ledger.js';

interface Target {
  projectId: string;
  datasetId: string;
  target: string;
  published: boolean;
  /** What the sink says the target took (for an adopted job, what that job published). */
  rows?: number;
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
  const client: BigQuery = options.bigqueryClient ?? createBigQueryClient(defaults?.projectId);
  const deadline = cleanupDeadline(signal, environment.stopDeadlineMs);
  const retry = {
    limits: ledger.LEDGER_RETRY_LIMITS,
    logger,
    ...(defaults?.requestTimeoutMs ? { requestTimeoutMs: defaults.requestTimeoutMs } : {}),
    ...(deadline ? { signal: deadline } : {}),
  };

  const targetsOf = (tile: RecordedTile): Target[] => {
    const found = new Map<string, Target>();
    for (const output of tile.outputs) {
      const parsed = output.sink === 'bigquery' ? ledger.parseBigQueryTarget(output.target) : undefined;
      if (parsed) found.set(output.target, { ...parsed, target: output.target, published: true, rows: output.rows, details: output.details });
    }
    for (const target of [...(tile.unpublished ?? []), ...tile.targets]) {
      const parsed = target.startsWith('/') ? undefined : ledger.parseBigQueryTarget(target);
      if (parsed && !found.has(target)) found.set(target, { ...parsed, target, published: false });
    }
    if (found.size === 0) {
      // Failed before any writer opened (a refused token): the targets the job's config names.
      const job = jobs.find((candidate) => candidate.name === tile.job);
      const projectId = defaults?.projectId ?? (client.projectId !== '{{projectId}}' ? client.projectId : undefined);
      for (const sink of job?.sinks ?? []) {
        if (sink.type !== 'bigquery' || projectId === undefined) continue;
        const datasetId = sink.dataset ?? defaults?.dataset;
        if (datasetId === undefined) continue;
        const target = `${projectId}.${datasetId}.${sink.table ?? tile.job}`;
        found.set(target, { projectId, datasetId, target, published: false });
      }
    }
    return [...found.values()];
  };

  return async (tile, window) => {
    for (const target of targetsOf(tile)) {
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
        schemaHash: tile.columns.length > 0 ? ledger.schemaHashOf(tile.columns) : undefined,
        jobId: typeof jobId === 'string' ? jobId : undefined,
        loadJobId: typeof loadJobId === 'string' ? loadJobId : undefined,
        errorCode: tile.error?.code,
        startedAt: new Date(Date.now() - tile.durationMs),
        durationMs: tile.durationMs,
      };
      try {
        await ledger.appendLedgerRow(client, { projectId: target.projectId, datasetId: target.datasetId, location: defaults?.location }, row, retry);
      } catch (error) {
        logger.error({ err: messageOf(error), target: target.target }, `job ${tile.job}: the run ledger (${ledger.RUN_LEDGER_TABLE}) of ${target.projectId}.${target.datasetId} could not be appended to: ${messageOf(error)}`);
      }
    }
  };
}
