import type { BigQuery } from '@google-cloud/bigquery';
import type { z } from 'zod';
import type { ConfigProblem } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { SinkConfig } from '../config/job-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { Sink, SinkResult } from './sink.js';
import type { StoreSeams } from './stores/registry.js';
import type { WindowStateReader } from './window-state.js';
import type { JobDefinition } from '../value-types/job-definition.js';
import type { WorkspaceCheckerFactory } from './workspace-checks.js';
import type { LineageDatasetName } from './lineage-dataset-name.js';

/**
 * What building a sink may be handed instead of production's defaults (the object stores' seams,
 * `StoreSeams`, to which each store's folder adds its own): a type every kind's descriptor takes,
 * so it lives in this contract, which the kinds import (not in build-sinks.ts, which imports the
 * registry, which imports the kinds).
 */
export interface SinkFactoryOptions extends StoreSeams {
  /** Injected in tests and the benchmark (emulator); production uses Application Default Credentials. */
  bigqueryClient?: BigQuery;
}

/** What a run recorder reads of one tile's run (the pipeline's JobRunSummary gives all of it). */
export interface RecordedTile {
  job: string;
  tile: string;
  runId: string;
  status: 'succeeded' | 'failed' | 'partially_published';
  rows: number;
  durationMs: number;
  columns: ReadonlyArray<{ name: string; type: string }>;
  /** The targets that hold this run. */
  outputs: readonly SinkResult[];
  /** The targets this run published to or meant to publish to beside them (none for a failed run: see `attempted`). */
  targets: readonly string[];
  /** A failed run: the targets it opened and did not publish to. */
  attempted?: readonly string[] | undefined;
  /** Targets that still hold the previous run after a partial publish. */
  unpublished?: readonly string[] | undefined;
  error?: { code: string } | undefined;
  /** The fingerprint of the job's definition the run ran with. */
  definition?: JobDefinition | undefined;
  /** When the run started, on its own clock; absent: this process's clock less the duration. */
  startedAt?: Date | undefined;
  /** What the publish guards said of each target (see sinks/publish-guard.ts). */
  guard?: { tripped: boolean; overridden: boolean; verdicts: ReadonlyArray<{ target: string; verdict: string; rule?: string | undefined }> } | undefined;
}

export type { LineageDatasetName } from './lineage-dataset-name.js';

/** Records one tile run (or backfill window) where a kind keeps its runs (BigQuery: the run ledger). */
export type RunRecorder = (tile: RecordedTile, window?: { from: string; to: string; open?: boolean }) => Promise<void>;

/** One secret a kind reads: its field in the environment file, its key in the Secret, and how the config names it. */
export interface KindSecret {
  /** The environment file's field, e.g. `sinks.postgres.passwordFile`. */
  field: string;
  key: string;
  /** `${ENV}` (the variable the pod gets from the Secret), or absent with `file`. */
  reference?: string;
  /** The absolute path the pod mounts the Secret's key at. */
  file?: string;
}

/**
 * The views' questions a kind's sink must answer (a kind's `build` returns one, so a kind that
 * lacks an answer does not compile): which run wrote its target (`status`), whether a run could
 * write it (`check`, and `plan` beside its column difference), what the target holds for the
 * publish guard, and its columns as the target stores them (lineage). `Sink` keeps them optional
 * for a test's own sink. Where a kind cannot tell, its answer says so in a sentence the view prints
 * (`TargetPublication.state: 'unrecorded'`, `StoredSchema.unknown`), never nothing.
 */
export type KindSink = Sink &
  Required<Pick<Sink, 'publication' | 'checkAccess' | 'guardCheck' | 'storedSchema'>> &
  // The target a run would write, named before it opens (lineage's FAIL before any writer opened).
  Required<Pick<Sink, 'plannedDataset'>> &
  // What runs left where it writes, with how each goes (`status` after a run that did not end well).
  Required<Pick<Sink, 'leftovers'>>;

/**
 * Everything the rest of tilehouse asks of one kind of sink, given by the kind's folder
 * (`csv/descriptor.ts`, `bigquery/descriptor.ts`) and found through `registry.ts`: callers ask the
 * descriptors instead of importing a kind or branching on its name. What a descriptor needs that
 * is heavy (a Cloud client) it loads on demand, so a run that does not use the kind never pays for it.
 */
export interface SinkKind {
  /** The `type` of the kind's sink configs in a job file. */
  readonly type: SinkConfig['type'];
  /** How a person names the kind (`CSV`, `BigQuery`, `PostgreSQL`): `tilehouse --help` lists every kind by it. */
  readonly label: string;
  /** Its sinks' config schema in a job file (config/<kind>-sink-schema.ts; the job schema's union is config/sink-schemas.ts). */
  readonly configSchema: z.ZodType;
  /**
   * Which settings of its sinks' config the job's definition depends on (`decides`: where and how
   * the rows land, e.g. a path, a table, a write mode, a key) and which it does not (`decidesNot`:
   * how a run is checked or the table laid out, e.g. a guard's thresholds): the fingerprint's and
   * the run history's `sinks` part holds only the first, so a changed threshold is not "its sinks
   * changed". Every key of `configSchema` is in exactly one list (test/sinks/conformance/registry.test.ts).
   */
  readonly definitionSettings: { readonly decides: readonly string[]; readonly decidesNot: readonly string[] };
  /**
   * The sink a job's config asks for, the environment's defaults merged (`index`: its place in
   * the job's sinks, for the error that names its field). Invalid combinations are configuration
   * errors. A heavy implementation (the BigQuery client) is loaded here, on demand.
   */
  build(sink: SinkConfig, index: number, job: LoadedJob, environment: EnvironmentConfig, options: SinkFactoryOptions): Promise<KindSink>;
  /** What the targets of the job's sinks of this kind hold, window by window, in the job's sink order. */
  windowStateReaders(
    job: LoadedJob,
    sinks: readonly Sink[],
    environment: EnvironmentConfig,
    options: SinkFactoryOptions,
    logger: Logger,
  ): Promise<WindowStateReader[]>;
  /**
   * The recorder of runs into this kind's targets, for the jobs of a run; undefined when none of
   * them has such a sink or the environment turns it off. A record that cannot be written is
   * logged and does not change the run's outcome.
   */
  runRecorder?(
    jobs: readonly LoadedJob[],
    environment: EnvironmentConfig,
    options: SinkFactoryOptions,
    logger: Logger,
    signal?: AbortSignal,
  ): Promise<RunRecorder | undefined>;
  /** What `validate` (and every command that writes) checks of this kind's sinks without the network. */
  readonly workspaceChecker: WorkspaceCheckerFactory;
  /**
   * The sink as a windowed job (backfill, incremental) writes it, one output per window (a
   * default filled in), with the problems that keep it from doing so; `index` is its place in
   * the job's sinks.
   */
  forWindows(sink: SinkConfig, index: number, job: LoadedJob): { sink: SinkConfig; problems: ConfigProblem[] };
  /** Whether this sink takes a job's windows one at a time, oldest first (a merge by key). */
  takesWindowsOneAtATime(sink: SinkConfig): boolean;
  /**
   * The warehouse jobs a published result of this kind names, the publishing job first (the run
   * summary's `bigqueryJobIds`, for an orchestrator that looks them up); absent: it names none.
   */
  jobIdsOf?(result: SinkResult): string[];
  /**
   * The OpenLineage dataset a target of this kind is (`target` as a writer and a result name it),
   * and how many files one published output is (file kinds: 1; absent: not a file).
   */
  readonly lineage: { dataset(target: string): LineageDatasetName; filesPerOutput?: number };
  /** Why `backfill --resume` cannot tell which windows the job's sinks of this kind hold, if it cannot. */
  resumeRefusal(job: LoadedJob, environment: EnvironmentConfig): string | undefined;
  /**
   * The annotations this sink needs on the pods' service account (an s3:// target: the IAM role
   * of IRSA on EKS, `eks.amazonaws.com/role-arn`); absent or undefined: none.
   */
  serviceAccountAnnotations?(sink: SinkConfig, environment: EnvironmentConfig): Record<string, string> | undefined;
  /**
   * The secrets this kind's environment settings read for the jobs given (a password by `${ENV}` or
   * in a mounted file), each with its key in the credentials Secret: `tilehouse k8s` wires them as
   * it wires the source's (an env var from the Secret, or the file in the Secret's one mount).
   * Empty: the kind reads none of its own (BigQuery and the buckets use the pod's identity).
   */
  secrets(environment: EnvironmentConfig, jobs: readonly LoadedJob[]): KindSecret[];
  /**
   * What the kind needs on Kubernetes, for a kind that writes local files: the directory a sink
   * writes below, as the image's absolute path (`workdir` resolves a relative one), or undefined
   * when this sink writes nothing locally (an object in a bucket); the pod mounts an emptyDir
   * there, and each such directory is warned about (gone with the pod). Absent: no volume.
   */
  readonly localFiles?: {
    directory(sink: SinkConfig, environment: EnvironmentConfig, workdir: string): string | undefined;
    emptyDirWarning(directory: string, jobNames: readonly string[]): string;
  };
}
