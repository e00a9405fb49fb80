import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import { metricsPusherFor } from '../metrics/push-metrics.js';
import type { JobRunSummary, RunSummary } from '../pipeline/job-summary.js';
import type { OnProgress } from '../pipeline/progress.js';
import { newRunId } from '../pipeline/run-id.js';
import { countOutcomes, runJobs } from '../pipeline/run-jobs.js';
import { runCatchUp, type CatchUpReport } from '../pipeline/windows/catch-up.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { runRecorderFor } from '../sinks/registry.js';
import type { Sink } from '../sinks/sink.js';
import type { RunnableWorkspace } from './load-workspace.js';
import { windowRunContextOf, type RunSeams } from './run-context.js';
import { refuseConflictingTargets } from './workspace-checks.js';
import { telemetry } from '../telemetry/telemetry.js';
import { RunHistory, type RunInProgress, type RunStart } from '../history/run-history.js';
import { errorReport } from '../errors.js';
import type { EarlierTries } from '../pipeline/run-id-held.js';

export interface WorkspaceRunOptions {
  logger: Logger;
  /** The process's stop signal: the run ledger's, and every run's unless a scheduled tick gives its own. */
  signal?: AbortSignal;
  seams: RunSeams;
  /** Flags a printed fix command repeats to act on the same workspace (--config, --jobs). */
  fixFlags: readonly string[];
  /**
   * `run`: refuse two jobs on one target before a token is fetched, and log "run starting" once
   * the sinks are built. (An unwritable directory fails its own job at write time, with
   * permission_denied, and the other jobs still run.)
   */
  oneShot?: boolean;
}

/** After each tile's publish: the ledger row first (what the targets hold), then the metrics. */
type TileReporter = (tile: JobRunSummary, startedAt: Date) => Promise<void>;

/**
 * What `run` and `schedule` share: a workspace's jobs with their sinks built once, the run ledger
 * and the metrics pusher wired, and each job run as its kind wants: an ordinary job through
 * runJobs, an incremental one caught up day by day (pipeline/windows/catch-up.ts), which appends
 * its own ledger rows and pushes its own metrics.
 */
export class WorkspaceRunner {
  private constructor(
    private readonly workspace: RunnableWorkspace,
    private readonly jobs: readonly LoadedJob[],
    private readonly sinks: ReadonlyMap<string, Sink[]>,
    private readonly reporters: readonly TileReporter[],
    private readonly options: WorkspaceRunOptions,
    private readonly history: RunHistory,
  ) {}

  /** Builds every job's sinks (jobs already as a run takes them: jobForRun), then the ledger recorder and the metrics pusher. */
  static async open(workspace: RunnableWorkspace, jobs: readonly LoadedJob[], options: WorkspaceRunOptions): Promise<WorkspaceRunner> {
    if (options.oneShot === true) await refuseConflictingTargets(workspace.environment, workspace.configFile, jobs);
    const sinks = new Map<string, Sink[]>();
    for (const job of jobs) sinks.set(job.name, await buildSinks(job, workspace.environment, options.seams.sinkOptions));
    const { logger } = options;
    if (options.oneShot === true) logger.info({ jobs: jobs.map((job) => job.name), config: workspace.configFile }, 'run starting');
    const metrics = metricsPusherFor(workspace.environment.metrics, logger);
    const ledger = await runRecorderFor(jobs, workspace.environment, options.seams.sinkOptions ?? {}, logger, options.signal);
    const schedule = (tile: JobRunSummary) => jobs.find((job) => job.name === tile.job)?.schedule;
    const traced = telemetry();
    const reporters = [
      // The run's own start (the clock seam's, a replayed night's), not this process's clock minus the duration.
      ledger === undefined ? undefined : (tile: JobRunSummary, startedAt: Date) => ledger({ ...tile, startedAt }),
      metrics === undefined ? undefined : async (tile: JobRunSummary) => void (await metrics.pushTileRun(tile, schedule(tile))),
      // OpenTelemetry's run metrics, when the command opened it before the runner.
      traced.enabled ? async (tile: JobRunSummary) => traced.recordRun({ ...tile, errorCode: tile.error?.code }) : undefined,
    ].filter((reporter) => reporter !== undefined);
    const history = await RunHistory.open(workspace, logger, options.seams.sinkOptions);
    return new WorkspaceRunner(workspace, jobs, sinks, reporters, options, history);
  }

  /**
   * Every job once: the ordinary ones together (runJobs), then the incremental ones one after
   * another, each caught up day by day; the summary counts them all.
   */
  async runAll(run: {
    runId?: string;
    /** `runId` came from the caller (--run-id, TILEHOUSE_RUN_ID: a retried pod's), not drawn for this run: an earlier try may have published it. */
    runIdGiven?: boolean;
    /** When the run started: the instant its run id was drawn from, when the command drew one (default: now). */
    startedAt?: Date;
    strict: boolean;
    allowShrink?: boolean;
    onProgress?: OnProgress;
    onJobsRun?: () => void;
  }): Promise<{ summary: RunSummary; reports: CatchUpReport[] }> {
    const { signal } = this.options;
    // One clock reading for the run id's time and the run's startedAt: the same instant.
    const startedAt = run.startedAt ?? this.now();
    const runId = run.runId ?? newRunId(startedAt);
    // A run id given (a retried pod's) may be an earlier try's: what the history says of it, before this try's record is written.
    const earlier = run.runIdGiven === true ? await this.earlierTriesOf(runId) : undefined;
    const recording = await this.history.begin(this.jobs, this.runStart(runId, startedAt, 'run'));
    let summary: RunSummary;
    const reports: CatchUpReport[] = [];
    try {
      try {
        summary = await this.runOrdinary(
          this.jobs.filter((job) => job.incremental === undefined),
          signal,
          recording,
          {
            runId,
            startedAt,
            ...(run.onProgress === undefined ? {} : { onProgress: run.onProgress }),
            ...(run.allowShrink === true ? { allowShrink: true } : {}),
            ...(earlier === undefined
              ? {}
              : { earlierTries: (job: string) => Promise.resolve(earlier.get(job)!), onPublishing: (job: string) => recording.publishing(job) }),
          },
        );
      } finally {
        run.onJobsRun?.();
      }
      const incrementalStarted = Date.now();
      for (const job of this.jobs.filter((candidate) => candidate.incremental !== undefined)) {
        if (signal?.aborted) break;
        const { tiles, report } = await this.catchUp(job, summary.runId, signal, run.strict, run.allowShrink === true);
        await recording.finish(tiles, { failed: report.failed, ran: report.windows });
        summary = {
          ...summary,
          tiles: [...summary.tiles, ...tiles],
          tokenFetches: summary.tokenFetches + tiles.reduce((sum, tile) => sum + tile.tokenFetches, 0),
        };
        reports.push(report);
      }
      summary = { ...summary, durationMs: summary.durationMs + (Date.now() - incrementalStarted) };
    } catch (error) {
      await recording.end(this.endOf(error));
      throw error;
    }
    await recording.end(this.endOf(undefined));
    // The ordinary run's own duration, plus what the incremental jobs took after it.
    summary = { ...summary, ...countOutcomes(summary.tiles) };
    this.options.logger.info({ summary }, 'run finished');
    return { summary, reports };
  }

  /**
   * One scheduled tick of one job, stopped by the tick's own signal. An incremental job's tick
   * catches up every day since the last one its targets hold, so a tick missed while the worker
   * was down is made good by the next one. `tile`: the one the scheduler reports (the first that
   * did not succeed, else the last).
   */
  async runTick(job: LoadedJob, signal: AbortSignal): Promise<{ tile: JobRunSummary | undefined; report?: CatchUpReport }> {
    const startedAt = this.now();
    const runId = newRunId(startedAt);
    const recording = await this.history.begin([job], this.runStart(runId, startedAt, 'schedule'));
    try {
      if (job.incremental !== undefined) {
        const { tiles, report } = await this.catchUp(job, runId, signal, false);
        await recording.finish(tiles, { failed: report.failed, ran: report.windows });
        await recording.end(this.endOf(undefined, signal));
        return { tile: tiles.find((tile) => tile.status !== 'succeeded') ?? tiles.at(-1), report };
      }
      const summary = await this.runOrdinary([job], signal, recording, { runId, startedAt });
      await recording.end(this.endOf(undefined, signal));
      return { tile: summary.tiles[0] };
    } catch (error) {
      await recording.end(this.endOf(error, signal));
      throw error;
    }
  }

  /** The history's word on earlier tries of a run id, for every job of this runner. */
  private async earlierTriesOf(runId: string): Promise<ReadonlyMap<string, EarlierTries>> {
    const jobs = this.jobs.filter((job) => job.incremental === undefined);
    return new Map(await Promise.all(jobs.map(async (job) => [job.name, await this.history.earlierTries(job.name, runId)] as const)));
  }

  private now(): Date {
    return (this.options.seams.now ?? (() => new Date()))();
  }

  /** A run's start as its history records it; the trace id of the command's root span, when telemetry is on. */
  private runStart(runId: string, startedAt: Date, trigger: RunStart['trigger']): RunStart {
    return { runId, startedAt, trigger, traceId: telemetry().logFields().trace_id };
  }

  /** What the history records of the jobs a run never reported the end of: what threw, else the stop. */
  private endOf(error: unknown, signal: AbortSignal | undefined = this.options.signal): { code: string; message: string } | undefined {
    if (error !== undefined) {
      const { code, message } = errorReport(error);
      return { code, message };
    }
    return signal?.aborted ? { code: 'run_stopped', message: 'the run was stopped before this job ran' } : undefined;
  }

  private runOrdinary(
    jobs: readonly LoadedJob[],
    signal: AbortSignal | undefined,
    recording: RunInProgress,
    extra: {
      runId: string;
      startedAt: Date;
      onProgress?: OnProgress;
      allowShrink?: boolean;
      earlierTries?: (job: string) => Promise<EarlierTries>;
      onPublishing?: (job: string) => Promise<void>;
    },
  ): Promise<RunSummary> {
    const { workspace } = this;
    // The history's record of the job first: what the morning reads does not wait on a slow Pushgateway.
    const reporters: TileReporter[] = [(tile) => recording.finish([tile]), ...this.reporters];
    return runJobs(jobs, {
      environment: workspace.environment,
      credentials: workspace.credentials,
      logger: this.options.logger,
      buildSinks: (job) => this.sinks.get(job.name)!,
      retry: this.options.seams.retry,
      ...(this.options.seams.now === undefined ? {} : { now: this.options.seams.now }),
      signal,
      ...extra,
      definitionOfRun: (job, runId) => this.history.definitionOfRun(job, runId),
      onTileFinished: async (tile, startedAt) => {
        for (const report of reporters) await report(tile, startedAt);
      },
    });
  }

  private catchUp(job: LoadedJob, runId: string, signal: AbortSignal | undefined, strict: boolean, allowShrink = false) {
    const { logger, seams, fixFlags } = this.options;
    const context = {
      ...windowRunContextOf(this.workspace, logger, signal, seams),
      fixFlags,
      ...(strict ? { strict } : {}),
      ...(allowShrink ? { allowShrink } : {}),
    };
    return runCatchUp(job, this.sinks.get(job.name)!, runId, context);
  }
}
