import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { DateWindow } from '../pipeline/backfill-windows.js';
import type { SinkFactoryOptions } from '../sinks/build-sinks.js';
import { CsvSink } from '../sinks/csv/csv-sink.js';
import { manifestPathOf, sha256Of } from '../sinks/csv/manifest.js';
import type { Sink } from '../sinks/sink.js';
import { UsageError } from './command.js';
import { readFile } from 'node:fs/promises';

/**
 * `backfill --resume`: the windows every sink of the job shows as done, to be skipped. A CSV sink
 * shows it with a manifest beside the window's file whose sha256 matches the file (so it needs
 * `manifest: true`); a BigQuery sink with its latest `_tilehouse_runs` row for the window saying
 * succeeded and published. A window any sink cannot vouch for runs again (re-running is safe:
 * each window replaces exactly its own file or partition).
 */
export async function doneWindowsOf(
  job: LoadedJob,
  sinks: readonly Sink[],
  windows: readonly DateWindow[],
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
): Promise<Set<string>> {
  const withoutManifest = job.sinks.findIndex((sink) => sink.type === 'csv' && sink.manifest !== true);
  if (withoutManifest >= 0) {
    throw UsageError.of(`backfill: --resume tells a finished CSV window by its manifest: set manifest: true on sinks[${withoutManifest}] of ${job.name} (then run once without --resume)`);
  }
  if (job.sinks.some((sink) => sink.type === 'bigquery') && environment.sinks.bigquery?.runLedger === false) {
    throw UsageError.of('backfill: --resume reads the BigQuery run ledger, which sinks.bigquery.runLedger: false turns off');
  }
  let done = new Set(windows.map((window) => window.from));
  for (const sink of sinks) {
    if (sink instanceof CsvSink) {
      const finished = new Set<string>();
      for (const window of windows) {
        const target = sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window });
        const manifest = await readFile(manifestPathOf(target), 'utf8').then((text) => JSON.parse(text) as { sha256?: string }, () => undefined);
        if (manifest?.sha256 !== undefined && manifest.sha256 === (await sha256Of(target).catch(() => undefined))) finished.add(window.from);
      }
      done = new Set([...done].filter((from) => finished.has(from)));
    }
  }
  const bigquery = job.sinks.filter((sink) => sink.type === 'bigquery');
  if (bigquery.length > 0) {
    const { BigQuery } = await import('@google-cloud/bigquery');
    const ledger = await import('../sinks/bigquery/run-ledger.js');
    const defaults = environment.sinks.bigquery;
    const client = options.bigqueryClient ?? new BigQuery({ ...(defaults?.projectId ? { projectId: defaults.projectId } : {}), retryOptions: { autoRetry: false } });
    const projectId = defaults?.projectId ?? (await client.getProjectId());
    for (const sink of bigquery) {
      const datasetId = sink.dataset ?? defaults!.dataset;
      const finished = await ledger.doneWindows(client, { projectId, datasetId, location: defaults?.location }, job.name, sink.table ?? job.name, { limits: { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 8_000 }, logger });
      done = new Set([...done].filter((from) => finished.has(from)));
    }
  }
  return done;
}
