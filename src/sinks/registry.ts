// src/sinks/, module by module (ARCHITECTURE.md gives the folder one paragraph):
// `registry.ts` (this module): every kind of sink, one line each, and the questions the rest of tilehouse
// asks of them; nothing outside `src/sinks/` imports a kind's folder. `sink-kind.ts`: `KindSink`, what a kind's
// built sink must answer the views (status, check and plan, the guard, lineage's stored schema and the dataset a run would write, named before it opens), and the descriptor each
// kind's folder exports as `<kind>/descriptor.ts` (its config schema, how it is built, what a windowed job
// requires of it, which windows its targets hold, its run recorder, its workspace checks, what it needs on
// Kubernetes); its access check is the built sink's `checkAccess`. `window-state.ts`: what a target holds,
// window by window, closed or still open when exported (each kind's reader in its folder: `files/` asks the
// file's store, `bigquery/window-state.ts` the run ledger). The run recorders of every kind as one
// (`runRecorderFor`); the warehouse jobs a result names (`jobIdsOf`, the summary's `bigqueryJobIds`); a job's
// definition as the fingerprint takes it, each sink's deciding settings only (`definitionSourceOf`).
// `workspace-checks.ts`: what a kind checks without the network. `sink.ts`: the `Sink` (stream rows, then
// `prepare` / `publish`, two phases, or `abort`; `publishRank`, `sweep`, a writer's `guard`), and the rules
// every kind's guard shares, `publish-guard.ts` (`judgeGuard`: empty, shrink, recent runs). `build-sinks.ts`:
// config → sinks, each built by its kind's descriptor with the `SinkFactoryOptions` of `sink-kind.ts`.
// `owned-temp-files.ts`: the sweep of temp files named after their owner process (`src/temp-owner.ts`).
// `file-system-failure.ts` (disk_full, permission_denied, target_is_directory), `writable-directory.ts`
// (whether files can be written below a directory), `timestamp-text.ts` (a TIMESTAMP as ISO text, a day's
// prefix cached, for the CSV encoder). The kinds: `csv/`, `parquet/`, `bigquery/`, `postgres/`, `iceberg/`; `files/` is what the
// file kinds share, `stores/` where their files land, `google/` the Google identity BigQuery and Cloud
// Storage share.

import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { SinkConfig } from '../config/job-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { DefinitionSource, SinkDefinition } from '../value-types/job-definition.js';
import { bigquerySinkKind } from './bigquery/descriptor.js';
import { csvSinkKind } from './csv/descriptor.js';
import { icebergSinkKind } from './iceberg/descriptor.js';
import { parquetSinkKind } from './parquet/descriptor.js';
import type { GoogleCredentials } from './google/google-credentials.js';
import { postgresSinkKind } from './postgres/descriptor.js';
import type { Sink, SinkResult } from './sink.js';
import type { RunRecorder, SinkFactoryOptions, SinkKind } from './sink-kind.js';
import type { WindowStateReader } from './window-state.js';
import type { SinkWorkspaceChecker } from './workspace-checks.js';

export type { KindSecret, RunRecorder, SinkKind } from './sink-kind.js';
export type { SinkWorkspaceChecker, WorkspaceProblem } from './workspace-checks.js';
export { WindowStateUnreadableError, type WindowStateReader } from './window-state.js';
// Documents kept beside the targets (the run history's records), where a store keeps them: asked
// through the sinks' registry, as everything outside src/sinks/ asks, never of a store's folder.
export { documentsAt, storeKindOf, type StoredDocuments, type StoreSeams } from './stores/registry.js';

/**
 * Every kind of sink, one line each: a new kind is its folder plus a line here. The order is the
 * order callers list the kinds' targets in (CSV targets before BigQuery tables, as before).
 */
export const sinkKinds: readonly SinkKind[] = [csvSinkKind, bigquerySinkKind, parquetSinkKind, postgresSinkKind, icebergSinkKind];

/** The kinds' `type`s, in registry order (the run summary's `sink` enum). */
export const sinkTypes = sinkKinds.map((kind) => kind.type) as [SinkConfig['type'], ...SinkConfig['type'][]];

/**
 * The process's one Google identity, the BigQuery and Cloud Storage sinks' (google/google-credentials.ts),
 * for a Google API called outside the sinks (lineage's Data Lineage transport), so both share one
 * token; loaded on first use.
 */
export async function sinksGoogleCredentials(options: { waitMs?: number }, env: NodeJS.ProcessEnv): Promise<GoogleCredentials> {
  const { sharedGoogleCredentials } = await import('./google/google-credentials.js');
  return sharedGoogleCredentials(options, env);
}

/** The descriptor of a sink config's kind (or of a result's: `{ type: result.sink }`). */
export function sinkKindOf(sink: Pick<SinkConfig, 'type'>): SinkKind {
  const kind = sinkKinds.find((candidate) => candidate.type === sink.type);
  if (kind === undefined) throw new Error(`no sink kind ${String(sink.type)} in src/sinks/registry.ts`);
  return kind;
}

/** The warehouse jobs the results name, each once, in the results' order (each kind says which its results name). */
export function jobIdsOf(outputs: readonly SinkResult[]): string[] {
  const ids: string[] = [];
  for (const output of outputs) {
    for (const id of sinkKindOf({ type: output.sink }).jobIdsOf?.(output) ?? []) if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

/**
 * A job's definition as the fingerprint and the run history take it (value-types/job-definition.ts):
 * each sink as its kind's `type` and the settings its kind says decide what lands, so that a guard's
 * threshold or another setting that only changes how a run is checked is not "its sinks changed".
 */
export function definitionSourceOf(job: LoadedJob): DefinitionSource {
  const sinks = job.sinks.map((sink): SinkDefinition => {
    const config = sink as unknown as Record<string, unknown>;
    const settings: Record<string, unknown> = {};
    for (const name of sinkKindOf(sink).definitionSettings.decides) if (name !== 'type' && config[name] !== undefined) settings[name] = config[name];
    return { type: sink.type, settings };
  });
  return { ...job, sinks };
}

/** The window-state readers of every sink of a job, kind by kind. */
export async function windowStateReaders(
  job: LoadedJob,
  sinks: readonly Sink[],
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
): Promise<WindowStateReader[]> {
  const readers: WindowStateReader[] = [];
  for (const kind of sinkKinds) readers.push(...(await kind.windowStateReaders(job, sinks, environment, options, logger)));
  return readers;
}

/**
 * The run recorders of every kind the jobs use (today the BigQuery run ledger), as one: each
 * tile run is recorded by each recorder in turn, kind by kind. Undefined when no kind records.
 */
export async function runRecorderFor(
  jobs: readonly LoadedJob[],
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
  signal?: AbortSignal,
): Promise<RunRecorder | undefined> {
  const recorders: RunRecorder[] = [];
  for (const kind of sinkKinds) {
    const recorder = await kind.runRecorder?.(jobs, environment, options, logger, signal);
    if (recorder !== undefined) recorders.push(recorder);
  }
  if (recorders.length <= 1) return recorders[0];
  return async (tile, window) => {
    for (const recorder of recorders) await recorder(tile, window);
  };
}

/** Each kind's workspace checker for these jobs, in registry order, by the kind's `type`. */
export async function workspaceCheckers(
  environment: EnvironmentConfig,
  configFile: string,
  jobs: readonly LoadedJob[],
): Promise<Map<string, SinkWorkspaceChecker>> {
  const checkers = new Map<string, SinkWorkspaceChecker>();
  for (const kind of sinkKinds) checkers.set(kind.type, await kind.workspaceChecker(environment, configFile, jobs));
  return checkers;
}
