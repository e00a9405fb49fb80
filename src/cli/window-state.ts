import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { TilehouseError } from '../errors.js';
import type { Logger } from '../log.js';
import type { DateWindow } from '../pipeline/backfill-windows.js';
import type { SinkFactoryOptions } from '../sinks/build-sinks.js';
import { CsvSink } from '../sinks/csv/csv-sink.js';
import { manifestPathOf, sha256Of } from '../sinks/csv/manifest.js';
import type { Sink } from '../sinks/sink.js';
import { readFile } from 'node:fs/promises';

/**
 * What one target of a job shows as published, window by window: the one question `backfill
 * --resume` and an incremental run ask of a sink. One reader per sink, so a new kind of target
 * (CSV on gs://) adds a reader and changes neither caller.
 */
export interface WindowStateReader {
  /** The target as an operator knows it: a CSV path template, project.dataset.table. */
  readonly target: string;
  /** The first days of `windows` this target holds, whole and published. Throws when it cannot tell. */
  doneWindows(windows: readonly DateWindow[]): Promise<Set<string>>;
}

/** A target whose state could not be read (ledger unreachable, manifest unreadable): nothing is run on a guess. */
export class WindowStateUnreadableError extends TilehouseError {
  readonly code = 'incremental_state_unreadable';
}

/**
 * A local CSV target holds a window when the manifest beside the window's file matches the file
 * (sha256): the manifest is renamed in right after the file, so a file without its manifest, or
 * beside the previous run's, is a window that did not finish. A missing file or manifest is "not
 * done"; any other read error is an error, not a guess.
 */
export function csvManifestState(job: LoadedJob, sink: CsvSink, template: string): WindowStateReader {
  const absent = (error: unknown): undefined => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: ${(error as Error).message}`, { cause: error });
  };
  return {
    target: template,
    async doneWindows(windows) {
      const done = new Set<string>();
      for (const window of windows) {
        const target = sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window });
        const text = await readFile(manifestPathOf(target), 'utf8').catch(absent);
        if (text === undefined) continue;
        let manifest: { sha256?: unknown };
        try {
          manifest = JSON.parse(text) as { sha256?: unknown };
        } catch {
          continue; // a manifest cut short by a crash mid-write: that window did not finish
        }
        if (typeof manifest.sha256 === 'string' && manifest.sha256 === (await sha256Of(target).catch(absent))) done.add(window.from);
      }
      return done;
    },
  };
}

/** The readers of every sink of a job, in the job's sink order. */
export async function windowStateReaders(job: LoadedJob, sinks: readonly Sink[], environment: EnvironmentConfig, options: SinkFactoryOptions, logger: Logger): Promise<WindowStateReader[]> {
  const readers: WindowStateReader[] = [];
  let csvIndex = 0;
  const csvConfigs = job.sinks.filter((sink) => sink.type === 'csv');
  for (const sink of sinks) {
    if (sink instanceof CsvSink) readers.push(csvManifestState(job, sink, csvConfigs[csvIndex++]?.path ?? '{name}/{date}.csv'));
  }
  const bigquery = job.sinks.filter((sink) => sink.type === 'bigquery');
  if (bigquery.length === 0) return readers;
  const { BigQuery } = await import('@google-cloud/bigquery');
  const ledger = await import('../sinks/bigquery/run-ledger.js');
  const defaults = environment.sinks.bigquery;
  const client = options.bigqueryClient ?? new BigQuery({ ...(defaults?.projectId ? { projectId: defaults.projectId } : {}), retryOptions: { autoRetry: false } });
  for (const sink of bigquery) {
    const datasetId = sink.dataset ?? defaults!.dataset;
    const tableId = sink.table ?? job.name;
    readers.push({
      target: `${defaults?.projectId ?? '(default project)'}.${datasetId}.${tableId}`,
      async doneWindows(windows) {
        let finished: Set<string>;
        try {
          const projectId = defaults?.projectId ?? (await client.getProjectId());
          finished = await ledger.doneWindows(client, { projectId, datasetId, location: defaults?.location }, job.name, tableId, { limits: { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 8_000 }, logger });
        } catch (error) {
          throw new WindowStateUnreadableError(`job ${job.name}: cannot read the run ledger ${datasetId}._tilehouse_runs for table ${tableId}: ${(error as Error).message}`, { cause: error });
        }
        return new Set(windows.map((window) => window.from).filter((from) => finished.has(from)));
      },
    });
  }
  return readers;
}
