import { Cron } from 'croner';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { JobRunSummary } from '../pipeline/job-summary.js';

/** Runs one job once; aborted through `signal` when the grace period ends. */
export type RunJob = (job: LoadedJob, signal: AbortSignal) => Promise<JobRunSummary | undefined>;

export interface SchedulerEvents {
  /** A tick came while the job's previous run was still going; that tick is skipped. */
  skipped?: (job: LoadedJob) => void;
  finished?: (job: LoadedJob, summary: JobRunSummary | undefined) => void;
}

/**
 * The in-process worker: every job on its own cron and timezone (croner), never two runs of one
 * job at once, and a drain on stop — running tiles get a grace period, then are aborted, which
 * removes their temp files and publishes nothing partial.
 */
export class Scheduler {
  private readonly crons: Cron[] = [];
  private readonly running = new Map<string, Promise<void>>();
  private readonly abortRunning = new AbortController();

  constructor(
    private readonly jobs: readonly LoadedJob[],
    private readonly runJob: RunJob,
    private readonly logger: Logger,
    private readonly events: SchedulerEvents = {},
  ) {}

  /** Starts every job that has a schedule; returns the jobs scheduled with their next run. */
  start(): Array<{ job: string; cron: string; timezone: string; nextRun: Date | null }> {
    const plan = [];
    for (const job of this.jobs) {
      if (job.schedule === undefined) {
        this.logger.warn({ job: job.name }, `job ${job.name} has no schedule; it runs only with "tilehouse run"`);
        continue;
      }
      const cron = new Cron(job.schedule.cron, { timezone: job.schedule.timezone, name: job.name }, () => this.tick(job));
      this.crons.push(cron);
      const nextRun = cron.nextRun();
      plan.push({ job: job.name, cron: job.schedule.cron, timezone: job.schedule.timezone, nextRun });
      this.logger.info(
        { job: job.name, cron: job.schedule.cron, timezone: job.schedule.timezone, nextRun: nextRun?.toISOString() ?? null },
        `scheduled ${job.name}`,
      );
    }
    return plan;
  }

  /** Jobs running right now. */
  get busy(): string[] {
    return [...this.running.keys()];
  }

  /**
   * Stops scheduling, waits up to `graceMs` for running tiles, then aborts the rest and waits
   * until they have cleaned up. Resolves true when everything finished within the grace period.
   */
  async stop(graceMs: number): Promise<boolean> {
    for (const cron of this.crons) cron.stop();
    const all = Promise.all(this.running.values());
    if (this.running.size === 0) return true;
    this.logger.info({ running: this.busy, graceMs }, 'stopping: waiting for running tiles');
    let timer: NodeJS.Timeout | undefined;
    const inTime = await Promise.race([all.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs)))]);
    clearTimeout(timer);
    if (!inTime) {
      this.logger.warn({ running: this.busy }, 'grace period over: aborting running tiles');
      this.abortRunning.abort(new Error('scheduler stopped'));
      await all;
    }
    return inTime;
  }

  private tick(job: LoadedJob): void {
    if (this.running.has(job.name)) {
      this.logger.warn({ job: job.name }, `skipped a run of ${job.name}: the previous run is still going`);
      this.events.skipped?.(job);
      return;
    }
    const run = this.runJob(job, this.abortRunning.signal)
      .then((summary) => this.events.finished?.(job, summary))
      .catch((error: unknown) => this.logger.error({ job: job.name, err: error }, `run of ${job.name} crashed`))
      .finally(() => this.running.delete(job.name));
    this.running.set(job.name, run);
  }
}
