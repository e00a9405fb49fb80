import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { Logger } from '../../log.js';
import { holdings, type WindowStateReader, WindowStateUnreadableError } from '../window-state.js';

/**
 * The readers of a job's postgres sinks, in the job's sink order: the windows the run ledger
 * records as published into each table (a ledger row is written in the publishing transaction,
 * so it is exactly what the table holds). Loaded on demand, with the driver.
 */
export async function postgresWindowStateReaders(job: LoadedJob, environment: EnvironmentConfig, logger: Logger): Promise<WindowStateReader[]> {
  const sinks = job.sinks.filter((sink) => sink.type === 'postgres');
  const settings = environment.sinks.postgres;
  if (sinks.length === 0 || settings === undefined) return [];
  const { resolvePostgresConnection } = await import('./connection-settings.js');
  const { connectPostgres, closeQuietly } = await import('./postgres-client.js');
  const { ledgerWindows } = await import('./run-ledger.js');
  const { configuredTarget } = await import('./postgres-plan.js');
  return sinks.map((sink) => {
    const { schema, table } = configuredTarget(sink, settings.schema, job.name);
    const target = `${schema}.${table}`;
    return {
      target,
      async heldWindows(windows) {
        let client: Awaited<ReturnType<typeof connectPostgres>> | undefined;
        try {
          const connection = await resolvePostgresConnection(settings, 'the environment file');
          client = await connectPostgres(connection, { jobName: job.name, target });
          const published = await ledgerWindows(client, schema, target);
          const held = holdings();
          for (const window of windows) {
            const rows = published.filter((entry) => entry.from === window.from && entry.to === window.to);
            // The latest publish of a window decides: open if it was published before its day ended.
            const latest = rows.at(-1);
            if (latest === undefined) continue;
            (latest.open ? held.open : held.done).add(window.from);
          }
          return held;
        } catch (error) {
          logger.warn({ target, error: (error as Error).message }, 'cannot read the PostgreSQL run ledger');
          throw new WindowStateUnreadableError(
            `job ${job.name}: cannot read the run ledger ${schema}._tilehouse_runs for table ${target}: ${(error as Error).message}`,
            { cause: error },
          );
        } finally {
          await closeQuietly(client);
        }
      },
    };
  });
}
