import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { Logger } from '../../log.js';
import { parseTimestamp } from '../../transform/index.js';
import type { SinkFactoryOptions } from '../sink-kind.js';
import type { WindowHoldings, WindowStateReader } from '../window-state.js';
import { WindowStateUnreadableError } from '../window-state.js';
import { configuredTable, tableName } from './table-name.js';

/**
 * The readers of a job's BigQuery sinks, in the job's sink order: the days the run ledger
 * (`_tilehouse_runs`, run-ledger.ts) records as published. The client and the ledger are loaded
 * on demand, as build-sinks does: CSV-only runs do not pay for the BigQuery client.
 */
export async function bigqueryWindowStateReaders(
  job: LoadedJob,
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
): Promise<WindowStateReader[]> {
  const bigquery = job.sinks.filter((sink) => sink.type === 'bigquery');
  if (bigquery.length === 0) return [];
  const readers: WindowStateReader[] = [];
  const { createBigQueryClient } = await import('./bigquery-client.js');
  const ledger = await import('./run-ledger.js');
  const defaults = environment.sinks.bigquery;
  const client =
    options.bigqueryClient ??
    createBigQueryClient(defaults?.projectId, process.env, { apiEndpoint: defaults?.apiEndpoint, credentialsWaitMs: environment.googleCredentialsWaitMs });
  for (const sink of bigquery) {
    const table = configuredTable(sink, defaults, job.name);
    const { datasetId, tableId } = table;
    readers.push({
      target: tableName(table),
      async heldWindows(windows) {
        let finished: WindowHoldings;
        try {
          const projectId = defaults?.projectId ?? (await client.getProjectId());
          const endOf = (day: string) => parseTimestamp(day, job.timezone) as number;
          finished = await ledger.doneWindows(
            client,
            { projectId, datasetId, location: defaults?.location },
            job.name,
            tableId,
            { limits: ledger.LEDGER_RETRY_LIMITS, logger },
            endOf,
          );
        } catch (error) {
          throw new WindowStateUnreadableError(
            `job ${job.name}: cannot read the run ledger ${datasetId}._tilehouse_runs for table ${tableId}: ${(error as Error).message}`,
            { cause: error },
          );
        }
        const asked = windows.map((window) => window.from);
        return { done: new Set(asked.filter((from) => finished.done.has(from))), open: new Set(asked.filter((from) => finished.open.has(from))) };
      },
    });
  }
  return readers;
}
