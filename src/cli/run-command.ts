import { formatRunSummary } from '../presentation/run-summary.js';
import type { RunSummary } from '../pipeline/job-summary.js';
import { RUN_ID_PATTERN } from '../pipeline/run-id.js';
import { runSummaryDocument } from '../pipeline/summary-schema.js';
import { ALLOW_SHRINK_HELP, allowShrinkOf, nominalWindowOf, ORCHESTRATION_HELP, runIdOf, workspaceFlags } from './orchestration-flags.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, settleExitCode, stopExitCode, UsageError, type Command } from './command.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { WorkspaceRunner } from '../workspace/workspace-runner.js';
import { jobForRun } from '../pipeline/windows/windowed-job.js';
import { openOutput, progressLines, SUMMARY_HELP, summaryTargetOf } from './output.js';
import { reportSummary } from './report-summary.js';
import { catchUpLines } from '../presentation/window-lines.js';
import { newRunId } from '../pipeline/run-id.js';
import { openRunTelemetry } from '../telemetry/open-telemetry.js';
import { telemetryWanted } from '../telemetry/otel-settings.js';
import { isTilehouseError } from '../errors.js';
import { ATTR, failureOf, type SpanFailure } from '../telemetry/telemetry.js';
import { closeLineage, openLineage } from '../lineage/open-lineage.js';

/** The root span's failure: the first tile that did not succeed, by its code. */
export function runFailureOf(summary: Pick<RunSummary, 'tiles'>): SpanFailure | undefined {
  const tile = summary.tiles.find((candidate) => candidate.status !== 'succeeded');
  return tile?.error === undefined ? undefined : failureOf(tile.error);
}

/** A partial publish needs attention before a plain failure does: its targets disagree. */
export function exitCodeOf(summary: Pick<RunSummary, 'failed' | 'partiallyPublished'>): number {
  if (summary.partiallyPublished > 0) return EXIT.partiallyPublished;
  return summary.failed > 0 ? EXIT.tileFailed : EXIT.ok;
}

export const runCommand: Command = {
  name: 'run',
  help: `Usage: tilehouse run [--config FILE] [--jobs DIR] [--job NAME]... [--run-id ID] [--window-start T --window-end T]
                     [--strict] [--allow-shrink] [--json | --summary-json FILE] [-q | -v]

Exports each selected tile once: fresh token, every page, typed columns, then every sink of a job
publishes the run, or none does. An incremental job (incremental: in its file) exports instead
each day from the first one its targets have not published (minus lookbackDays; startFrom on its
first run) up to the source's today, one window at a time, oldest first, at most maxWindows: the
rest is left for the next run with a warning (exit 0). Its state (CSV manifests, the BigQuery run
ledger) that cannot be read fails the job with incremental_state_unreadable, targets that
disagree with incremental_state_ambiguous and the backfill that fixes it; nothing is exported. Logs go to stderr: one line per event and a live progress line
per tile on a terminal, JSON lines otherwise; a human summary ends the run (stderr).

Options:
${COMMON_HELP}
  -t, --job NAME       run only this job (by its name); repeatable (a name given twice runs once)
      --tile NAME      the same as --job (its older name)
      --strict         an incremental job's day window whose rows all fell outside it fails
                       (backfill_window_empty, nothing published) instead of a warning: line
${ALLOW_SHRINK_HELP}
${ORCHESTRATION_HELP}
                       A run id publishes once: re-run with it, a target that holds it adopts
                       (nothing committed), a partially published run converges, and a target
                       that cannot tell refuses the run (run_id_unverified, docs/failure-behaviour.md).
${SUMMARY_HELP}
${logHelp('info')}
  -h, --help           show this help

Example:
  tilehouse run --config config/production.example.yaml --job daily_incidents_by_severity --json > summary.json

Exit codes: 0 every tile succeeded, 1 at least one tile failed (the others still ran),
2 bad config or usage (nothing ran), 3 a tile's sinks were partially published (the summary
names which hold the new run; re-run), 143 / 130 stopped by SIGTERM / SIGINT (no partial output;
a publish already under way ends first). The summary's exitCode is always the exit code.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('run', args, {
      job: { type: 'string', short: 't', multiple: true },
      'run-id': { type: 'string' },
      'window-start': { type: 'string' },
      'window-end': { type: 'string' },
      strict: { type: 'boolean' },
      'allow-shrink': { type: 'boolean' },
      json: { type: 'boolean' },
      'summary-json': { type: 'string' },
    });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    // With telemetry on, the run id is chosen here, so the trace's resource can carry it; the run
    // then starts at the instant its id was drawn from (one clock reading), not after start-up.
    const drawnAt = telemetryWanted(io.env) ? (seams.now ?? (() => new Date()))() : undefined;
    const givenRunId = runIdOf('run', values['run-id'], io.env, RUN_ID_PATTERN, 64);
    const runId = givenRunId ?? (drawnAt === undefined ? undefined : newRunId(drawnAt));
    const window = nominalWindowOf('run', values);
    const allowShrink = allowShrinkOf('run', values['allow-shrink'], io.env);
    const output = openOutput('run', values, io, 'info');
    const summaryTarget = await summaryTargetOf('run', values, io.env);
    const workspace = await loadRunnableWorkspace(values, values.job ?? [], io.env, io);
    const jobs = workspace.selected.map(jobForRun);
    if (runId !== undefined && runId.length > 55 && jobs.some((job) => job.incremental !== undefined)) {
      throw UsageError.of(`run: --run-id of an incremental job leaves room for the -YYYYMMDD of its day windows: at most 55 characters, got ${runId.length}`);
    }
    const { logger } = output;
    // Before telemetry: settings it refuses (exit 2) leave nothing open behind them.
    const lineage = await openLineage({
      env: io.env,
      section: workspace.environment.lineage,
      logger,
      writeConsole: (line) => io.stderr.write(line),
      nominal: window ?? undefined,
    });
    const traced = await openRunTelemetry(io.env, logger, io.signal, { [ATTR.command]: 'run', [ATTR.jobs]: jobs.map((job) => job.name), [ATTR.runId]: runId });
    const onProgress = progressLines(output);
    // Whatever throws from here on (the run, the summary's lines or file), the root span ends and
    // telemetry is uninstalled: finish() runs in `finally`, with the code the command exits with.
    let finished: { exitCode: number; failure?: SpanFailure } = { exitCode: EXIT.tileFailed };
    try {
      const { summary, reports } = await traced.within(async () => {
        const runner = await WorkspaceRunner.open(workspace, jobs, { logger, signal: io.signal, seams, fixFlags: workspaceFlags(values), oneShot: true });
        return runner.runAll({
          strict: values.strict === true,
          allowShrink,
          ...(runId === undefined ? {} : { runId }),
          ...(givenRunId === undefined ? {} : { runIdGiven: true }),
          ...(givenRunId === undefined && drawnAt !== undefined ? { startedAt: drawnAt } : {}),
          ...(onProgress === undefined ? {} : { onProgress }),
          onJobsRun: () => output.screen?.close(),
        });
      });
      // Settled as the summary states it: a stop before now makes it the signal's, whatever the tiles did.
      const code = settleExitCode(io, exitCodeOf(summary));
      traced.setAttributes({
        [ATTR.runId]: summary.runId,
        'tilehouse.tiles.succeeded': summary.succeeded,
        'tilehouse.tiles.failed': summary.failed,
        'tilehouse.tiles.partially_published': summary.partiallyPublished,
      });
      io.stderr.write(formatRunSummary(summary));
      for (const report of reports) io.stderr.write(catchUpLines(report));
      const exitCode = await reportSummary(summaryTarget, runSummaryDocument(summary, { exitCode: code, window, incremental: reports }), code, io);
      finished = { exitCode, failure: runFailureOf(summary) };
      return exitCode;
    } catch (error) {
      finished = { exitCode: stopExitCode(io) ?? (isTilehouseError(error) ? error.exitCode : EXIT.tileFailed), failure: failureOf(error) };
      throw error;
    } finally {
      // After the summary is out: a collector or a lineage consumer that does not answer delays only
      // the exit, by a bounded time.
      await closeLineage(lineage);
      await traced.finish(finished.exitCode, finished.failure);
    }
  },
};
