import { ConfigError, type ConfigProblem } from '../config/config-error.js';
import type { LoadedJob } from '../config/load-config.js';
import { isCalendarDate, splitWindows, type WindowStep } from '../pipeline/windows/date-windows.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { backfillItemIndex } from '../pipeline/windows/run-windows.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, UsageError, type Command } from './command.js';
import { openOutput, SUMMARY_HELP, summaryTargetOf } from './output.js';
import { reportSummary } from './report-summary.js';
import { loadRunnableWorkspace } from './load-workspace.js';
import { BACKFILL_RUN_ID_PATTERN, newRunId } from '../pipeline/run-id.js';
import { shareOf } from '../pipeline/windows/shard-windows.js';
import { backfillSummaryDocument } from '../pipeline/summary-schema.js';
import { runIdOf, shardOf } from './orchestration-flags.js';
import { runWindowsReported, windowsExitCode, workspaceFlags } from './window-runs.js';
import { rerunCommands, windowLines } from '../presentation/window-lines.js';
import { doneWindowsOf } from './resume-windows.js';
import { sinkKindOf } from '../sinks/registry.js';
import { countNoun } from '../count-noun.js';

const STEPS: readonly WindowStep[] = ['day', 'week', 'month'];

/**
 * A backfill writes one output per window: each sink as its kind writes windows (its descriptor's
 * `forWindows`: CSV paths must contain {date}, BigQuery must write partitions or merge by key).
 */
export function jobForBackfill(job: LoadedJob): LoadedJob {
  const problems: ConfigProblem[] = [];
  const sinks = job.sinks.map((sink, index) => {
    const windowed = sinkKindOf(sink).forWindows(sink, index, job);
    problems.push(...windowed.problems);
    return windowed.sink;
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...job, sinks };
}

/**
 * An incremental job (`incremental:`) as the backfill machinery runs it: its item and bucket
 * column as the backfill section (the one the window runner reads), its sinks checked as a
 * backfill's (one file or partition per day).
 */
export function jobForIncremental(job: LoadedJob): LoadedJob {
  const incremental = job.incremental!;
  const item = incremental.item ?? job.backfill?.item;
  const bucketColumn = incremental.bucketColumn ?? job.backfill?.bucketColumn;
  return jobForBackfill({ ...job, backfill: { item: item!, ...(bucketColumn === undefined ? {} : { bucketColumn }) } });
}

export const backfillCommand: Command = {
  name: 'backfill',
  help: `Usage: tilehouse backfill --job NAME --from DATE --to DATE [--step day|week|month] [--concurrency N]
                          [--run-id ID] [--shard-index I --shard-count N] [--resume] [--json | --summary-json FILE]

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
                         outside it (not published) instead of warning
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
2 bad config or usage, 3 a window was partially published, 143 / 130 stopped by SIGTERM / SIGINT.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('backfill', args, {
      job: { type: 'string', short: 't', multiple: true },
      from: { type: 'string' },
      to: { type: 'string' },
      step: { type: 'string' },
      concurrency: { type: 'string' },
      strict: { type: 'boolean' },
      'run-id': { type: 'string' },
      resume: { type: 'boolean' },
      'shard-index': { type: 'string' },
      'shard-count': { type: 'string' },
      json: { type: 'boolean' },
      'summary-json': { type: 'string' },
    });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    for (const flag of ['job', 'from', 'to'] as const) if (values[flag] === undefined) throw UsageError.of(`backfill: --${flag} is required (see tilehouse backfill --help)`);
    const tiles = [...new Set(values.job)];
    if (tiles.length > 1) throw UsageError.of(`backfill: one --job per backfill, got ${tiles.join(', ')}; run one backfill per job (each has its own windows and re-run commands)`);
    const tileName = tiles[0]!;
    for (const flag of ['from', 'to'] as const) if (!isCalendarDate(values[flag]!)) throw UsageError.of(`backfill: --${flag} must be a date YYYY-MM-DD, got ${JSON.stringify(values[flag])}`);
    const step = (values.step ?? 'day') as WindowStep;
    if (!STEPS.includes(step)) throw UsageError.of(`backfill: --step must be one of ${STEPS.join(', ')}, got ${JSON.stringify(values.step)}`);
    const concurrency = Number(values.concurrency ?? '1');
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 32) throw UsageError.of(`backfill: --concurrency must be a whole number from 1 to 32, got ${JSON.stringify(values.concurrency)}`);
    if (values.to! <= values.from!) throw UsageError.of(`backfill: --to (${values.to}) must be after --from (${values.from})`);
    const runId = runIdOf('backfill', values['run-id'], io.env, BACKFILL_RUN_ID_PATTERN, 55) ?? newRunId();
    const shard = shardOf('backfill', values, io.env);

    const output = openOutput('backfill', values, io, 'warn');
    const summaryTarget = await summaryTargetOf('backfill', values, io.env);
    const workspace = await loadRunnableWorkspace(values, [tileName], io.env, io);
    const { credentials } = workspace;
    // An incremental job is backfilled with its incremental item (a backfill: section, if any, agrees).
    const selected = workspace.selected[0]!;
    const job = selected.incremental === undefined ? jobForBackfill(selected) : jobForIncremental(selected);
    backfillItemIndex(job);
    // Windows merged into one table go one at a time, oldest first: concurrent MERGEs into one
    // table conflict, and a key two windows hold must end with the later window's values.
    const merged = job.sinks.findIndex((sink) => sinkKindOf(sink).takesWindowsOneAtATime(sink));
    if (merged >= 0 && concurrency > 1) throw UsageError.of(`backfill: --concurrency ${concurrency}: job ${job.name}'s sinks[${merged}] merges by key, which takes windows one at a time (leave --concurrency out)`);
    const sinks = await buildSinks(job, workspace.environment, seams.sinkOptions);
    const { logger } = output;
    const allWindows = splitWindows(values.from!, values.to!, step);
    const shareWindows = shard === undefined ? allWindows : shareOf(allWindows, shard);
    if (shard !== undefined) logger.info({ shard, windows: shareWindows.length, of: allWindows.length }, `shard ${shard.index} of ${shard.count}: ${shareWindows.length} of ${countNoun(allWindows.length, 'window')}`);
    const done = values.resume ? await doneWindowsOf(job, sinks, shareWindows, workspace.environment, seams.sinkOptions ?? {}, logger) : new Set<string>();
    const skipped = shareWindows.filter((window) => done.has(window.from));
    const windows = shareWindows.filter((window) => !done.has(window.from));
    if (values.resume) logger.info({ skipped: skipped.length, remaining: windows.length }, `--resume: ${countNoun(skipped.length, 'window')} already done, ${windows.length} to run`);
    const { summary, rows, startedAt, durationMs } = await runWindowsReported({
      job, sinks, windows, workspace, output, io, seams, runId, concurrency, strict: values.strict === true, label: 'backfill',
    });

    const share = shard === undefined ? '' : ` (shard ${shard.index} of ${shard.count}: ${windows.length} of ${countNoun(allWindows.length, 'window')})`;
    const resumed = values.resume ? ` (--resume: ${skipped.length} already done, skipped)` : '';
    const rerun = rerunCommands(summary.failed, job.name, step, workspaceFlags(values));
    const lines = [`backfill ${job.name} ${values.from}..${values.to} by ${step}${share}: ${windows.length - summary.failed.length} of ${countNoun(windows.length, 'window')} succeeded, ${countNoun(rows, 'row')}${resumed}`, ...windowLines(summary, rerun)];
    io.stderr.write(`${lines.join('\n')}\n`);
    const code = windowsExitCode(summary);
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
    return reportSummary(summaryTarget, document, code, io);
  },
};
