import { once } from 'node:events';
import { buildSinks } from '../sinks/build-sinks.js';
import { runJobs } from '../pipeline/run-jobs.js';
import { metricsPusherFor } from '../metrics/push-metrics.js';
import { Scheduler } from '../schedule/scheduler.js';
import type { JobRunSummary } from '../pipeline/job-summary.js';
import { runRecorderFor } from '../sinks/registry.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, UsageError, type Command } from './command.js';
import { openOutput } from './output.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { jobForRun } from '../pipeline/windows/windowed-job.js';
import { runCatchUp } from '../pipeline/windows/catch-up.js';
import { catchUpLines } from '../presentation/window-lines.js';
import { windowRunContextOf } from '../workspace/run-context.js';
import { workspaceFlags } from './orchestration-flags.js';
import { newRunId } from '../pipeline/run-id.js';

export const scheduleCommand: Command = {
  name: 'schedule',
  help: `Usage: tilehouse schedule [--config FILE] [--jobs DIR] [--grace-seconds N] [-q | -v | --log-level LEVEL]

Runs every job that has a schedule on its cron and timezone, in one process. A job still running
when its next tick comes skips that tick (logged). An incremental job's tick exports every day
since the last one its targets hold (see tilehouse run --help), so a tick missed while the worker
was down is caught up by the next. At start, each job's next run is logged.
Each run is reported like a \`tilehouse run\`: a row in the run ledger of every BigQuery dataset
it wrote to (unless sinks.bigquery.runLedger is false), then its metrics, if configured.
On SIGTERM or SIGINT it stops scheduling, gives running tiles --grace-seconds to finish, then
aborts them cleanly (temp files removed, nothing partial published).

Options:
${COMMON_HELP}
      --grace-seconds N  how long running tiles may finish after SIGTERM (default 30)
${logHelp('info')}
  -h, --help             show this help

Example:
  tilehouse schedule --config config/production.example.yaml --grace-seconds 60

Exit codes: 143 / 130 after SIGTERM / SIGINT, 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('schedule', args, { 'grace-seconds': { type: 'string' } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    // Checked before anything is scheduled: once croner's timers run they keep the process alive,
    // so a refusal after them printed its error and then never exited (issue 25 item 5).
    if (io.signal === undefined) throw UsageError.of('schedule: needs a stop signal (run it as a process)');
    const grace = Number(values['grace-seconds'] ?? '30');
    if (!Number.isFinite(grace) || grace < 0) throw UsageError.of(`schedule: --grace-seconds must be a number ≥ 0, got ${JSON.stringify(values['grace-seconds'])}`);
    const output = openOutput('schedule', values, io, 'info');
    const { logger } = output;
    const workspace = await loadRunnableWorkspace(values, [], io.env, io);
    const { credentials } = workspace;
    const scheduled = workspace.jobs.filter((job) => job.schedule !== undefined).map(jobForRun);
    if (scheduled.length === 0) throw UsageError.of(`schedule: no job in ${workspace.jobsDirectory} has a schedule`);
    const sinks = new Map(await Promise.all(scheduled.map(async (job) => [job.name, await buildSinks(job, workspace.environment, seams.sinkOptions)] as const)));

    const metrics = metricsPusherFor(workspace.environment.metrics, logger);
    const ledger = await runRecorderFor(scheduled, workspace.environment, seams.sinkOptions ?? {}, logger, io.signal);
    // As in `run`, after the publish: the ledger row first (what the targets hold), then the metrics.
    const reportersOf = (job: (typeof scheduled)[number]) =>
      [ledger, metrics === undefined ? undefined : async (tile: JobRunSummary) => void (await metrics.pushTileRun(tile, job.schedule))].filter((reporter) => reporter !== undefined);
    const scheduler = new Scheduler(scheduled, async (job, signal) => {
      if (job.incremental !== undefined) {
        // A tick of an incremental job catches up every day since the last one its targets hold,
        // so a tick missed while the worker was down is made good by the next one.
        const context = { ...windowRunContextOf(workspace, logger, signal, seams), fixFlags: workspaceFlags(values) };
        const { tiles, report } = await runCatchUp(job, sinks.get(job.name)!, newRunId(), context);
        logger[report.error !== undefined || report.failed.length > 0 || report.left.length > 0 ? 'warn' : 'info']({ incremental: report }, catchUpLines(report).trim());
        return tiles.find((tile) => tile.status !== 'succeeded') ?? tiles.at(-1);
      }
      const reporters = reportersOf(job);
      const summary = await runJobs([job], {
        environment: workspace.environment,
        credentials,
        logger,
        buildSinks: () => sinks.get(job.name)!,
        retry: seams.retry,
        signal,
        ...(reporters.length === 0 ? {} : { onTileFinished: async (tile) => { for (const report of reporters) await report(tile); } }),
      });
      return summary.tiles[0];
    }, logger);
    scheduler.start();
    if (!io.signal.aborted) await once(io.signal, 'abort');
    const drained = await scheduler.stop(grace * 1000);
    logger.info({ drained }, drained ? 'stopped: every running tile finished' : 'stopped: running tiles were aborted');
    return EXIT.ok;
  },
};
