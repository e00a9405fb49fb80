import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { Logger } from '../../log.js';
import type { StoreOptions } from '../stores/registry.js';
import { holdings, type WindowStateReader, WindowStateUnreadableError } from '../window-state.js';
import { tableIdentifierOf } from './iceberg-names.js';

/**
 * The readers of a job's iceberg sinks, in the job's sink order: the windows the table's snapshots
 * record (`tilehouse.window-from` / `-to` / `-open` beside `tilehouse.run-id` in each summary
 * `main` reaches): the table's own history is the ledger. Loaded on demand, with the catalog.
 */
export async function icebergWindowStateReaders(
  job: LoadedJob,
  environment: EnvironmentConfig,
  stores: StoreOptions,
  logger: Logger,
): Promise<WindowStateReader[]> {
  const sinks = job.sinks.filter((sink) => sink.type === 'iceberg');
  const settings = environment.sinks.iceberg;
  if (sinks.length === 0 || settings === undefined) return [];
  const { openConfiguredCatalog } = await import('./catalog-settings.js');
  const { snapshotChain, SUMMARY_KEYS } = await import('./iceberg-sink.js');
  const { withTableFileStores } = await import('./table-files.js');
  return sinks.map((sink) => {
    const target = sink.table;
    return {
      target,
      async heldWindows(windows) {
        try {
          const catalog = await openConfiguredCatalog(settings, 'the environment file', { jobName: job.name, target }, process.env, {
            googleCredentialsWaitMs: environment.googleCredentialsWaitMs,
          });
          try {
            // The JDBC catalog reads the table's metadata file from its location (a bucket's: the stores').
            const loaded = await withTableFileStores(stores, () => catalog.loadTable(tableIdentifierOf(target)));
            const held = holdings();
            if (!loaded) return held;
            // Newest first: the latest commit of a window decides (open if it was exported before its day ended).
            const chain = snapshotChain(loaded.metadata);
            for (const window of windows) {
              const latest = chain.find(
                (snapshot) => snapshot.summary[SUMMARY_KEYS.windowFrom] === window.from && snapshot.summary[SUMMARY_KEYS.windowTo] === window.to,
              );
              if (latest === undefined) continue;
              (latest.summary[SUMMARY_KEYS.windowOpen] === 'true' ? held.open : held.done).add(window.from);
            }
            return held;
          } finally {
            await catalog.close();
          }
        } catch (error) {
          logger.warn({ target, error: (error as Error).message }, 'cannot read the Iceberg table');
          throw new WindowStateUnreadableError(`job ${job.name}: cannot read the snapshots of Iceberg table ${target}: ${(error as Error).message}`, {
            cause: error,
          });
        }
      },
    };
  });
}
