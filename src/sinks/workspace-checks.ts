import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { SinkConfig } from '../config/job-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Column } from '../transform/column.js';

/** A problem in a job or environment file, at a field path (located to a line by `validate`). */
export interface WorkspaceProblem {
  file: string;
  path: PropertyKey[];
  value?: unknown;
  message: string;
}

/** One sink's target as the workspace checks see it, with what its kind found wrong with it. */
export interface WorkspaceTarget {
  /** The target with what is known before a run filled in: an absolute path or URL, project.dataset.table. */
  name: string;
  /** The sink's field that names the target (`path`, `table`) and its value, for a conflict. */
  field: string;
  value: unknown;
  /** The machine as it is now: a directory that cannot be written. */
  fileSystem: WorkspaceProblem[];
  /** Columns the target's layout names that the job's predicted columns do not give. */
  columnLayout: WorkspaceProblem[];
}

/** What one kind checks of a workspace without the network (see cli/workspace-checks.ts). */
export interface SinkWorkspaceChecker {
  /** Problems of the environment's settings for this kind (a CSV directory that cannot be written). */
  readonly fileSystem: WorkspaceProblem[];
  /**
   * Settings of this kind no run can use, found without the network (a DATABASE_URL whose value
   * does not parse): `validate` lists them, and `run`, `check`, `plan` refuse with them before
   * any job starts (config_invalid, exit 2), as for a mistake in the file; absent: none.
   */
  readonly invalid?: WorkspaceProblem[];
  /**
   * Like `invalid`, for the commands that connect only (never `validate`, which holds no secret):
   * settings found unusable by reading a secret file (a url file whose URL does not parse).
   */
  readonly invalidWhenConnecting?: () => Promise<WorkspaceProblem[]>;
  /** Secrets of this kind's environment settings that cannot be resolved here (`validate`'s "not checked" lines, as the source's); absent: none. */
  readonly unchecked?: WorkspaceProblem[];
  /**
   * The target of one of a job's sinks of this kind (`index` in the job's sinks), or undefined
   * when it cannot be named (a bad template, reported when the sinks are built).
   * `predictedColumns` gives the job's columns as its files predict them, undefined when they
   * cannot be derived.
   */
  target(job: LoadedJob, index: number, sink: SinkConfig, predictedColumns: () => readonly Column[] | undefined): Promise<WorkspaceTarget | undefined>;
  /** Mistakes of a job as a whole with this kind (an incremental job whose state cannot be read). */
  jobErrors(job: LoadedJob): WorkspaceProblem[];
}

export type WorkspaceCheckerFactory = (environment: EnvironmentConfig, configFile: string, jobs: readonly LoadedJob[]) => Promise<SinkWorkspaceChecker>;
