import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { TilehouseError } from '../errors.js';
import type { Logger } from '../log.js';
import type { DateWindow } from '../pipeline/backfill-windows.js';
import type { SinkFactoryOptions } from '../sinks/build-sinks.js';
import { CsvSink } from '../sinks/csv/csv-sink.js';
import { isGcsTarget } from '../sinks/csv/csv-path.js';
import { manifestPathOf, sha256Of } from '../sinks/csv/manifest.js';
import type { Sink } from '../sinks/sink.js';
import { readFile } from 'node:fs/promises';
import { parseTimestamp } from '../transform/index.js';

/** The fields of a manifest (src/sinks/csv/manifest.ts) the state is read from, as untrusted JSON. */
type ManifestFields = { window?: { from?: unknown; to?: unknown; open?: unknown }; preparedAt?: unknown };

/**
 * What one target of a job shows as published, window by window: the one question `backfill
 * --resume` and an incremental run ask of a sink. One reader per sink, so a new kind of target
 * (CSV on gs://) adds a reader and changes neither caller.
 */
export interface WindowStateReader {
  /** The target as an operator knows it: a CSV path template, project.dataset.table. */
  readonly target: string;
  /** Which of `windows` this target holds, whole and published (first days). Throws when it cannot tell. */
  heldWindows(windows: readonly DateWindow[]): Promise<WindowHoldings>;
}

/**
 * What a target holds of some windows: `done`, whole, published and closed (the day had ended on
 * the source's clock when it was exported); `open`, published before the day ended, so rows may
 * have arrived since: not held, exported again.
 */
export interface WindowHoldings {
  done: Set<string>;
  open: Set<string>;
}

/**
 * Whether a published window was open. A manifest says so (`window.open`); one written before
 * that field existed is judged by when it was prepared against the end of its day on the job's
 * calendar, on the writing machine's clock (the only one it recorded). Prepared before the day
 * ended: open, exported once more (harmless: it replaces exactly its own file). After: closed, as
 * every such manifest counted before; only a machine clock ahead of the source's by more than
 * what was left of the day can take an open day for a closed one here. No time at all: open.
 */
export function wasOpen(manifest: ManifestFields, window: DateWindow, timezone: string): boolean {
  if (typeof manifest.window?.open === 'boolean') return manifest.window.open;
  const prepared = typeof manifest.preparedAt === 'string' ? Date.parse(manifest.preparedAt) : Number.NaN;
  return Number.isNaN(prepared) || prepared < (parseTimestamp(window.to, timezone) as number);
}

function holdings(): WindowHoldings {
  return { done: new Set(), open: new Set() };
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
    async heldWindows(windows) {
      const held = holdings();
      for (const window of windows) {
        const target = sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window });
        const text = await readFile(manifestPathOf(target), 'utf8').catch(absent);
        if (text === undefined) continue;
        let manifest: ManifestFields & { sha256?: unknown };
        try {
          manifest = JSON.parse(text) as ManifestFields & { sha256?: unknown };
        } catch {
          continue; // a manifest cut short by a crash mid-write: that window did not finish
        }
        if (typeof manifest.sha256 === 'string' && manifest.sha256 === (await sha256Of(target).catch(absent))) {
          (wasOpen(manifest, window, job.timezone) ? held.open : held.done).add(window.from);
        }
      }
      return held;
    },
  };
}

/** Manifests and objects of this many windows are read at a time (each window: two small requests). */
const OBJECT_STATE_CONCURRENCY = 8;

/**
 * A gs:// CSV target holds a window when the manifest object beside the window's object describes
 * that object: the object's run id (custom metadata every object tilehouse writes carries, kept
 * by the rewrite that publishes it) and size are the manifest's. The manifest is rewritten into
 * place right after the object, so a new object beside the previous run's manifest (a run that
 * died between the two) has another run id: not done. Asking for metadata, not hashing the
 * object, keeps a run's state to two small requests per day however large the days are. A
 * missing object or manifest is "not done"; any other failure (permission, network, bucket gone)
 * is an error, not a guess.
 */
export function csvObjectManifestState(job: LoadedJob, sink: CsvSink, template: string): WindowStateReader {
  return {
    target: template,
    async heldWindows(windows) {
      // Loaded here, as the sink loads them: a local CSV run never pays for the storage client.
      const [{ parseGcsObjectUrl }, { statusOf }, { RUN_ID_METADATA_KEY }, { mapWithConcurrency }] = await Promise.all([
        import('../config/gcs-url.js'),
        import('../sinks/gcs/gcs-errors.js'),
        import('../sinks/gcs/temp-objects.js'),
        import('../map-with-concurrency.js'),
      ]);
      const storage = await sink.storageClient();
      const targets = windows.map((window) => sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window }));
      // A missing bucket is asked about first, once: an object's 404 does not always say whether
      // the object or its bucket is missing, and a bucket gone is not a day never written.
      for (const bucket of new Set(targets.map((target) => parseGcsObjectUrl(target).bucket))) {
        let exists: boolean;
        try {
          [exists] = await storage.bucket(bucket).exists();
        } catch (error) {
          throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: bucket gs://${bucket}: ${(error as Error).message}`, { cause: error });
        }
        if (!exists) throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: the bucket gs://${bucket} does not exist (or these credentials cannot see it)`);
      }
      const stateOf = async (target: string, window: DateWindow): Promise<'done' | 'open' | 'not'> => {
        const { bucket, object } = parseGcsObjectUrl(target);
        const read = async <T>(url: string, request: () => Promise<T>): Promise<T | undefined> => {
          try {
            return await request();
          } catch (error) {
            if (statusOf(error) === 404) return undefined;
            throw new WindowStateUnreadableError(`job ${job.name}: cannot read ${template}'s state: ${url}: ${(error as Error).message}`, { cause: error });
          }
        };
        const text = await read(manifestPathOf(target), async () => String((await storage.bucket(bucket).file(manifestPathOf(object)).download())[0]));
        if (text === undefined) return 'not';
        let manifest: ManifestFields & { runId?: unknown; bytes?: unknown };
        try {
          manifest = JSON.parse(text) as ManifestFields & { runId?: unknown; bytes?: unknown };
        } catch {
          return 'not'; // not a manifest tilehouse wrote whole: that window did not finish
        }
        const metadata = await read(target, async () => (await storage.bucket(bucket).file(object).getMetadata())[0]);
        if (metadata === undefined || typeof manifest.runId !== 'string') return 'not';
        if (metadata.metadata?.[RUN_ID_METADATA_KEY] !== manifest.runId || Number(metadata.size) !== manifest.bytes) return 'not';
        return wasOpen(manifest, window, job.timezone) ? 'open' : 'done';
      };
      const results = await mapWithConcurrency(
        targets.map((target, index) => ({ target, window: windows[index]! })),
        OBJECT_STATE_CONCURRENCY,
        ({ target, window }) => stateOf(target, window),
      );
      const held = holdings();
      windows.forEach((window, index) => {
        const state = results[index];
        if (state === 'done' || state === 'open') held[state].add(window.from);
      });
      return held;
    },
  };
}

/** The readers of every sink of a job, in the job's sink order. */
export async function windowStateReaders(job: LoadedJob, sinks: readonly Sink[], environment: EnvironmentConfig, options: SinkFactoryOptions, logger: Logger): Promise<WindowStateReader[]> {
  const readers: WindowStateReader[] = [];
  let csvIndex = 0;
  const csvConfigs = job.sinks.filter((sink) => sink.type === 'csv');
  for (const sink of sinks) {
    if (!(sink instanceof CsvSink)) continue;
    const template = csvConfigs[csvIndex++]?.path ?? '{name}/{date}.csv';
    const sample = sink.targetFor({ jobName: job.name, tileId: job.tile, runId: '', startedAt: new Date(), window: { from: '2000-01-01', to: '2000-01-02' } });
    readers.push(isGcsTarget(sample) ? csvObjectManifestState(job, sink, template) : csvManifestState(job, sink, template));
  }
  const bigquery = job.sinks.filter((sink) => sink.type === 'bigquery');
  if (bigquery.length === 0) return readers;
  const { createBigQueryClient } = await import('../sinks/bigquery/bigquery-client.js');
  const ledger = await import('../sinks/bigquery/run-ledger.js');
  const defaults = environment.sinks.bigquery;
  const client = options.bigqueryClient ?? createBigQueryClient(defaults?.projectId);
  for (const sink of bigquery) {
    const datasetId = sink.dataset ?? defaults!.dataset;
    const tableId = sink.table ?? job.name;
    readers.push({
      target: `${defaults?.projectId ?? '(default project)'}.${datasetId}.${tableId}`,
      async heldWindows(windows) {
        let finished: WindowHoldings;
        try {
          const projectId = defaults?.projectId ?? (await client.getProjectId());
          const endOf = (day: string) => parseTimestamp(day, job.timezone) as number;
          finished = await ledger.doneWindows(client, { projectId, datasetId, location: defaults?.location }, job.name, tableId, { limits: { maxAttempts: 4, baseDelayMs: 1_000, maxDelayMs: 8_000 }, logger }, endOf);
        } catch (error) {
          throw new WindowStateUnreadableError(`job ${job.name}: cannot read the run ledger ${datasetId}._tilehouse_runs for table ${tableId}: ${(error as Error).message}`, { cause: error });
        }
        const asked = windows.map((window) => window.from);
        return { done: new Set(asked.filter((from) => finished.done.has(from))), open: new Set(asked.filter((from) => finished.open.has(from))) };
      },
    });
  }
  return readers;
}
