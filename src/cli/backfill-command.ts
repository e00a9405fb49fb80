import type { WindowStep } from '../pipeline/windows/date-windows.js';
import { isCalendarDate } from '../value-types/civil-date.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { backfillItemIndex, type BackfillSummary } from '../pipeline/windows/run-windows.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, settleExitCode, stopExitCode, UsageError, type CliIo, type Command } from './command.js';
import { openOutput, SUMMARY_HELP, summaryTargetOf } from './output.js';
import { reportSummary } from './report-summary.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { BACKFILL_RUN_ID_PATTERN, newRunId } from '../pipeline/run-id.js';
import { backfillSummaryDocument } from '../pipeline/summary-schema.js';
import { ALLOW_SHRINK_HELP, allowShrinkOf, runIdOf, shardOf, workspaceFlags } from './orchestration-flags.js';
import { runWindowBatch, type WindowProgress, type WindowRunContext } from '../pipeline/windows/window-batch.js';
import { jobForWindows, sinkTakingWindowsOneAtATime } from '../pipeline/windows/windowed-job.js';
import { selectBackfillWindows, type BackfillRange } from '../pipeline/windows/backfill-selection.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Sink } from '../sinks/sink.js';
import { preflightWindows } from '../pipeline/preflight-sinks.js';
import { windowRunContextOf } from '../workspace/run-context.js';
import { windowProgressText } from '../presentation/progress-text.js';
import { rerunCommands, windowLines } from '../presentation/window-lines.js';
import { openRunTelemetry } from '../telemetry/open-telemetry.js';
import { closeLineage, openLineage } from '../lineage/open-lineage.js';
import { ATTR, failureOf, telemetry, type SpanFailure } from '../telemetry/telemetry.js';
import { errorReport, isTilehouseError } from '../errors.js';
import { RunHistory, type RunInProgress } from '../history/run-history.js';
import { countNoun } from '../count-noun.js';

const STEPS: readonly WindowStep[] = ['day', 'week', 'month'];

/** 3 when a window was partially published, 1 when one failed, else 0. */
export function windowsExitCode(summary: BackfillSummary): number {
  if (summary.windows.some((result) => result.summary.status === 'partially_published')) return EXIT.partiallyPublished;
  return summary.failed.length > 0 ? EXIT.tileFailed : EXIT.ok;
}

export const backfillCommand: Command = {
  name: 'backfill',
  help: `Usage: tilehouse backfill --job NAME --from DATE --to DATE [--step day|week|month] [--concurrency N]
                          [--run-id ID] [--shard-index I --shard-count N] [--resume] [--allow-shrink]
                          [--json | --summary-json FILE]

Splits [--from, --to) into windows in the job's timezone and exports each window as its own run
into its own CSV file ({date} = the window's first day) or BigQuery partition (writeMode:
partition), so re-running a window replaces exactly that window. The job's backfill.item names the
query item whose rw filter is replaced per window; with backfill.bucketColumn (a grouped date
bucket) rows outside the window are dropped, which makes each window exact. Without it, windows
are exact to within one day and the summary says so.

Options:
  -t, --job NAME         the job to backfill (required; one per backfill: run one backfill per job)
      --tile NAME        the same as --job (its older name)
      --from DATE        first day, YYYY-MM-DD (required)
      --to DATE          day after the last, YYYY-MM-DD (required)
      --step S           day | week | month (default: day)
      --concurrency N    windows exported at the same time (default: 1)
      --strict           fail a window in the future (not run) or one whose rows all fell
                         outside it (not published) instead of warning, and refuse the backfill
                         when any window lies past a BigQuery table's partition expiration
${ALLOW_SHRINK_HELP}
      --run-id ID        the backfill's id (default: $TILEHOUSE_RUN_ID, else a new one; at most 55
                         characters); window YYYY-MM-DD runs as ID-YYYYMMDD, the same on a re-run
      --resume           skip the windows every sink shows done: a CSV file whose manifest
                         (manifest: true) matches it, a BigQuery partition whose latest
                         _tilehouse_runs row says succeeded
      --shard-index I    run only share I (0-based) of N contiguous shares of the windows (default:
      --shard-count N    $JOB_COMPLETION_INDEX with $TILEHOUSE_SHARD_COUNT in an Indexed Job,
                         $CLOUD_RUN_TASK_INDEX / $CLOUD_RUN_TASK_COUNT in a Cloud Run job; else all)
${COMMON_HELP}
${SUMMARY_HELP}
${logHelp('warn')}
  -h, --help             show this help

Example:
  tilehouse backfill --job daily_incidents_by_severity --from 2026-06-01 --to 2026-07-01 --step week

Exit codes: 0 every window succeeded, 1 a window failed (the re-run commands are printed),
2 bad config or usage, 3 a window was partially published, 143 / 130 stopped by SIGTERM / SIGINT
(the summary's exitCode is always the exit code).
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('backfill', args, BACKFILL_OPTIONS);
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const { tileName, step, concurrency, runId, shard, allowShrink } = backfillFlagsOf(values, io.env);
    const output = openOutput('backfill', values, io, 'warn');
    const summaryTarget = await summaryTargetOf('backfill', values, io.env);
    const workspace = await loadRunnableWorkspace(values, [tileName], io.env, io);
    // An incremental job is backfilled with its incremental item (a backfill: section, if any, agrees).
    const job = jobForWindows(workspace.selected[0]!);
    backfillItemIndex(job);
    const merged = sinkTakingWindowsOneAtATime(job);
    if (merged >= 0 && concurrency > 1)
      throw UsageError.of(
        `backfill: --concurrency ${concurrency}: job ${job.name}'s sinks[${merged}] merges by key, which takes windows one at a time (leave --concurrency out)`,
      );
    const sinks = await buildSinks(job, workspace.environment, seams.sinkOptions);
    const { logger, screen } = output;
    // Each window is a run of its own, in OpenLineage as in the run ledger (docs/lineage.md). Opened
    // before telemetry: settings it refuses (exit 2) leave nothing open behind them.
    const lineage = await openLineage({ env: io.env, section: workspace.environment.lineage, logger, writeConsole: (line) => io.stderr.write(line) });
    const traced = await openRunTelemetry(io.env, logger, io.signal, {
      [ATTR.command]: 'backfill',
      [ATTR.jobs]: [job.name],
      [ATTR.runId]: runId,
      'tilehouse.backfill.from': values.from,
      'tilehouse.backfill.to': values.to,
      'tilehouse.backfill.step': step,
      'tilehouse.backfill.shard_index': shard?.index,
      'tilehouse.backfill.shard_count': shard?.count,
    });
    const context = windowRunContextOf(workspace, logger, io.signal, seams);
    // The backfill in the run history, beside the nights' runs: `status` shows it (a backfill is no
    // night's run: it does not answer LATE), and finds the definition of the run that wrote a target.
    const history = await RunHistory.open(workspace, logger, seams.sinkOptions);
    const range = { from: values.from!, to: values.to!, step, resume: values.resume === true, ...(shard === undefined ? {} : { shard }) };
    const strict = values.strict === true;
    const progress = { onProgress: (done: WindowProgress) => screen?.set('backfill', windowProgressText(done)), onWindowsRun: () => screen?.close() };
    // Whatever throws from here on (the windows, the report, the summary file), the root span ends
    // and telemetry is uninstalled: finish() runs in `finally`, with the code the command exits with.
    let finished: { exitCode: number; failure?: SpanFailure } = { exitCode: EXIT.tileFailed };
    let recording: RunInProgress | undefined;
    let failure: { code: string; message: string } | undefined;
    try {
      const [selected, ran] = await traced.within(async () => {
        recording = await history.begin([job], {
          runId,
          startedAt: (seams.now ?? (() => new Date()))(),
          trigger: 'backfill',
          traceId: telemetry().logFields().trace_id,
          shard,
        });
        const chosen = await chooseWindows(job, sinks, range, context, { strict, recording, ...(io.signal === undefined ? {} : { signal: io.signal }) });
        return [chosen, await runWindowBatch({ job, sinks, windows: chosen.windows, runId, concurrency, strict, allowShrink, ...progress }, context)] as const;
      });
      const { summary } = ran;
      await recording?.finishWindows(
        job.name,
        summary.windows.map((result) => result.summary),
        { failed: summary.failed, ran: summary.windows.map((result) => result.window) },
        ran.durationMs,
      );
      const { document, code } = backfillReport(ran, selected, { job: job.name, step, shard, values }, io);
      const exitCode = await reportSummary(summaryTarget, document, code, io);
      const failedWindow = summary.windows.find((result) => result.summary.error !== undefined)?.summary.error;
      finished = { exitCode, ...(failedWindow === undefined ? {} : { failure: failureOf(failedWindow) }) };
      return exitCode;
    } catch (error) {
      finished = { exitCode: stopExitCode(io) ?? (isTilehouseError(error) ? error.exitCode : EXIT.tileFailed), failure: failureOf(error) };
      const { code, message } = errorReport(error);
      failure = { code, message };
      throw error;
    } finally {
      await recording?.end(failure ?? (io.signal?.aborted ? { code: 'run_stopped', message: 'the backfill was stopped before its windows ran' } : undefined));
      await closeLineage(lineage);
      await traced.finish(finished.exitCode, finished.failure);
    }
  },
};

/**
 * The windows the backfill runs (its share, less those `--resume` finds done), written into its
 * history record, then checked: windows a target would not keep (past a BigQuery table's partition
 * expiration) are refused before the first page.
 */
async function chooseWindows(
  job: LoadedJob,
  sinks: readonly Sink[],
  range: BackfillRange,
  context: WindowRunContext,
  options: { strict: boolean; recording: RunInProgress; signal?: AbortSignal },
) {
  const chosen = await selectBackfillWindows(job, sinks, range, context);
  await options.recording.describeBackfill(job.name, {
    from: range.from,
    to: range.to,
    step: range.step,
    windows: chosen.windows.length,
    ...(range.shard === undefined ? {} : { shard: range.shard }),
  });
  await preflightWindows(sinks, chosen.windows, {
    jobName: job.name,
    logger: context.logger,
    strict: options.strict,
    windowColumns: [job.backfill?.item, job.backfill?.bucketColumn].filter((name) => name !== undefined),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  return chosen;
}

const BACKFILL_OPTIONS = {
  job: { type: 'string', short: 't', multiple: true },
  from: { type: 'string' },
  to: { type: 'string' },
  step: { type: 'string' },
  concurrency: { type: 'string' },
  strict: { type: 'boolean' },
  'allow-shrink': { type: 'boolean' },
  'run-id': { type: 'string' },
  resume: { type: 'boolean' },
  'shard-index': { type: 'string' },
  'shard-count': { type: 'string' },
  json: { type: 'boolean' },
  'summary-json': { type: 'string' },
} as const;

type BackfillFlagValues = ReturnType<typeof parseCommandArgs<typeof BACKFILL_OPTIONS>>['values'];

/** The backfill's flags checked (exit 2 on any): one job, the dates, the step, the concurrency, the run id, the shard. */
function backfillFlagsOf(values: BackfillFlagValues, env: NodeJS.ProcessEnv) {
  for (const flag of ['job', 'from', 'to'] as const)
    if (values[flag] === undefined) throw UsageError.of(`backfill: --${flag} is required (see tilehouse backfill --help)`);
  const tiles = [...new Set(values.job)];
  if (tiles.length > 1)
    throw UsageError.of(`backfill: one --job per backfill, got ${tiles.join(', ')}; run one backfill per job (each has its own windows and re-run commands)`);
  for (const flag of ['from', 'to'] as const)
    if (!isCalendarDate(values[flag]!)) throw UsageError.of(`backfill: --${flag} must be a date YYYY-MM-DD, got ${JSON.stringify(values[flag])}`);
  const step = (values.step ?? 'day') as WindowStep;
  if (!STEPS.includes(step)) throw UsageError.of(`backfill: --step must be one of ${STEPS.join(', ')}, got ${JSON.stringify(values.step)}`);
  const concurrency = Number(values.concurrency ?? '1');
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 32)
    throw UsageError.of(`backfill: --concurrency must be a whole number from 1 to 32, got ${JSON.stringify(values.concurrency)}`);
  if (values.to! <= values.from!) throw UsageError.of(`backfill: --to (${values.to}) must be after --from (${values.from})`);
  const runId = runIdOf('backfill', values['run-id'], env, BACKFILL_RUN_ID_PATTERN, 55) ?? newRunId();
  const shard = shardOf('backfill', values, env);
  const allowShrink = allowShrinkOf('backfill', values['allow-shrink'], env);
  return { tileName: tiles[0]!, step, concurrency, runId, shard, allowShrink };
}

/** The backfill's lines on stderr (each window, the commands that re-run the failed ones) and its summary document. */
function backfillReport(
  ran: Pick<Awaited<ReturnType<typeof runWindowBatch>>, 'summary' | 'rows' | 'startedAt' | 'durationMs'>,
  selected: Awaited<ReturnType<typeof selectBackfillWindows>>,
  what: { job: string; step: WindowStep; shard: ReturnType<typeof shardOf>; values: BackfillFlagValues },
  io: CliIo,
) {
  const { summary, rows, startedAt, durationMs } = ran;
  const { all: allWindows, skipped, windows } = selected;
  const { step, shard, values } = what;
  const share = shard === undefined ? '' : ` (shard ${shard.index} of ${shard.count}: ${windows.length} of ${countNoun(allWindows.length, 'window')})`;
  const resumed = values.resume ? ` (--resume: ${skipped.length} already done, skipped)` : '';
  const rerun = rerunCommands(summary.failed, what.job, step, workspaceFlags(values));
  const lines = [
    `backfill ${what.job} ${values.from}..${values.to} by ${step}${share}: ${windows.length - summary.failed.length} of ${countNoun(windows.length, 'window')} succeeded, ${countNoun(rows, 'row')}${resumed}`,
    ...windowLines(summary, rerun),
  ];
  io.stderr.write(`${lines.join('\n')}\n`);
  // Settled as the summary states it: a stop before now makes it the signal's, whatever the windows did.
  const code = settleExitCode(io, windowsExitCode(summary));
  const document = backfillSummaryDocument({
    summary,
    exitCode: code,
    window: { start: values.from!, end: values.to! },
    startedAt,
    durationMs,
    from: values.from!,
    to: values.to!,
    step,
    shard: shard === undefined ? null : { ...shard, windows: allWindows.length },
    rows,
    rerun,
    skipped,
  });
  return { document, code };
}
