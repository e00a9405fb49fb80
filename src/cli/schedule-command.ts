import { once } from 'node:events';
import { Scheduler } from '../schedule/scheduler.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, UsageError, type Command } from './command.js';
import { openOutput } from './output.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { WorkspaceRunner } from '../workspace/workspace-runner.js';
import { jobForRun } from '../pipeline/windows/windowed-job.js';
import { catchUpLines } from '../presentation/window-lines.js';
import { openTelemetry } from '../telemetry/open-telemetry.js';
import { closeLineage, openLineage } from '../lineage/open-lineage.js';
import { ATTR, failureOf, NO_TELEMETRY, useTelemetry, type SpanFailure } from '../telemetry/telemetry.js';
import { workspaceFlags } from './orchestration-flags.js';
import { isTilehouseError } from '../errors.js';

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
    if (!Number.isFinite(grace) || grace < 0)
      throw UsageError.of(`schedule: --grace-seconds must be a number ≥ 0, got ${JSON.stringify(values['grace-seconds'])}`);
    const output = openOutput('schedule', values, io, 'info');
    const { logger } = output;
    const workspace = await loadRunnableWorkspace(values, [], io.env, io);
    const scheduled = workspace.jobs.filter((job) => job.schedule !== undefined).map(jobForRun);
    if (scheduled.length === 0) throw UsageError.of(`schedule: no job in ${workspace.jobsDirectory} has a schedule`);
    const lineage = await openLineage({ env: io.env, section: workspace.environment.lineage, logger, writeConsole: (line) => io.stderr.write(line) });
    // Each tick is a trace of its own (a root span per tick); the metrics leave every minute.
    const traced = await openTelemetry(io.env, logger, { [ATTR.command]: 'schedule', [ATTR.jobs]: scheduled.map((job) => job.name) });
    // Whatever throws from here on, the spans and metrics are flushed and telemetry uninstalled.
    try {
      const runner = await WorkspaceRunner.open(workspace, scheduled, { logger, signal: io.signal, seams, fixFlags: workspaceFlags(values) });
      const scheduler = new Scheduler(
        scheduled,
        async (job, signal) => {
          const root = traced.startRun({ [ATTR.command]: 'schedule', [ATTR.jobs]: [job.name] });
          let ended: { exitCode: number; failure?: SpanFailure } = { exitCode: EXIT.ok };
          try {
            const { tile, report } = await root.within(() => runner.runTick(job, signal));
            if (tile?.error !== undefined) ended = { exitCode: EXIT.tileFailed, failure: failureOf(tile.error) };
            if (report !== undefined) {
              logger[report.error !== undefined || report.failed.length > 0 || report.left.length > 0 ? 'warn' : 'info'](
                { incremental: report },
                catchUpLines(report).trim(),
              );
            }
            return tile;
          } catch (error) {
            // A tick that threw is recorded with the error's own code, as a run's root span is.
            ended = { exitCode: isTilehouseError(error) ? error.exitCode : EXIT.tileFailed, failure: failureOf(error) };
            throw error;
          } finally {
            root.end(ended.exitCode, ended.failure);
          }
        },
        logger,
      );
      scheduler.start();
      if (!io.signal.aborted) await once(io.signal, 'abort');
      const drained = await scheduler.stop(grace * 1000);
      logger.info({ drained }, drained ? 'stopped: every running tile finished' : 'stopped: running tiles were aborted');
      return EXIT.ok;
    } finally {
      await closeLineage(lineage);
      await traced.shutdown();
      useTelemetry(NO_TELEMETRY);
    }
  },
};
