import { messageOf, TilehouseError } from '../errors.js';
import type { Logger } from '../log.js';
import { ALLOW_SHRINK_ENV, ALLOW_SHRINK_FLAG, judgeGuard, type GuardCheck, type GuardVerdict, type TargetHolding } from '../sinks/publish-guard.js';
import type { Sink, SinkRunContext, SinkWriter } from '../sinks/sink.js';
import { describeDefinitionChanges, type JobDefinition, type ValueChange } from '../value-types/job-definition.js';
import { ATTR, EVENTS, telemetry } from '../telemetry/telemetry.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Column, TypedRow } from '../transform/column.js';
import { toTypedRows } from '../transform/typed-rows.js';

/** What the publish guards said of a tile's targets (the run summary's `guard`). */
export interface GuardReport {
  /** A guard refused the publish (then nothing was published, unless `overridden`). */
  tripped: boolean;
  /** --allow-shrink (TILEHOUSE_ALLOW_SHRINK): a tripped guard was overridden and the run published. */
  overridden: boolean;
  verdicts: GuardVerdict[];
}

/**
 * A guard refused the publish: every sink of the tile was prepared and none published, each
 * target holds what it held. Names each target that tripped, what it holds, this export, the rule,
 * and the settings and the flag that let it pass.
 */
export class PublishGuardTrippedError extends TilehouseError {
  readonly code = 'publish_guard_tripped';

  constructor(
    jobName: string,
    readonly report: GuardReport,
    /** What changed since the run that wrote the target, as old → new values (the run history kept the old ones), when known. */
    valueChanges: readonly ValueChange[] = [],
  ) {
    // One super call: a parameter property is assigned after it.
    super(refusalMessage(jobName, report, valueChanges));
  }
}

/**
 * The refusal's message: the edit first when the definition changed since the run that wrote a
 * target (old → new when known), then each tripped target, then the override after "if this is meant".
 */
function refusalMessage(jobName: string, report: GuardReport, valueChanges: readonly ValueChange[]): string {
  const trips = report.verdicts.filter((verdict) => verdict.verdict === 'trip');
  const settings = [...new Set(trips.map((verdict) => verdict.setting).filter((setting) => setting !== undefined))];
  const rule = `to change the rule, set ${settings.join(' or ')} on the sink or in the environment's sinks.<kind>.guard (guard: false turns it off)`;
  const changed = trips.find((verdict) => verdict.changedSince !== undefined)?.changedSince;
  if (changed === undefined)
    return (
      `job ${jobName}: publish guard tripped, nothing published: ` +
      trips.map((verdict) => `${verdict.target}: ${verdict.reason} (rule ${verdict.rule})`).join('; ') +
      `. If this run is meant to shrink its targets, run it again with ${ALLOW_SHRINK_FLAG} (or ${ALLOW_SHRINK_ENV}=1); ${rule}`
    );
  // The edit is the likeliest reason for the smaller export: said first, with its values when the history kept them.
  const described = describeDefinitionChanges(changed.changes, changed.runId);
  const values = valueChanges.map((change) => `${change.part}: ${change.old ?? '(none)'} → ${change.new ?? '(none)'}`).join('; ');
  const what = values === '' ? described : `the job changed since run ${changed.runId}: ${values}`;
  const suffix = `; ${described}`;
  const targets = trips
    .map((verdict) => `${verdict.target}: ${verdict.reason.endsWith(suffix) ? verdict.reason.slice(0, -suffix.length) : verdict.reason} (rule ${verdict.rule})`)
    .join('; ');
  return `job ${jobName}: ${what}; the publish guard refused this export, nothing published: ${targets}. If this is meant, run it again with ${ALLOW_SHRINK_FLAG} (or ${ALLOW_SHRINK_ENV}=1); ${rule}`;
}

/**
 * The guards of a tile's writers, after every one prepared and before any publishes: each
 * writer's target read by its kind (in parallel), each judged against this export's rows. A trip
 * throws PublishGuardTrippedError (the caller aborts every writer) unless `allowShrink`; then the
 * report says the guard was overridden.
 */
export async function checkPublishGuards(
  writers: readonly SinkWriter[],
  options: { jobName: string; logger: Logger; exportedRows: number; openWindow?: boolean; allowShrink?: boolean; definition?: JobDefinition },
): Promise<GuardReport | undefined> {
  const guarded = writers.filter((writer) => writer.guard !== undefined);
  if (guarded.length === 0) return undefined;
  const started = Date.now();
  const verdicts = await Promise.all(
    guarded.map(async (writer) => {
      const check = writer.guard!;
      if (check.settings === undefined)
        return judgeGuard(undefined, { target: writer.target, effect: 'replace', rows: undefined, readFrom: '' }, options.exportedRows);
      return judgeExplained(
        check,
        await check.holding(),
        options.exportedRows,
        { openWindow: options.openWindow === true, definition: options.definition },
        options.logger,
      );
    }),
  );
  traceVerdicts(verdicts, options.allowShrink === true);
  // What knowing the targets cost this run (the reads run in parallel): logged, for the operator who wonders.
  const readMs = Date.now() - started;
  for (const verdict of verdicts) {
    if (verdict.verdict === 'unknown') options.logger.warn({ target: verdict.target, readMs }, `publish guard of ${verdict.target}: ${verdict.reason}`);
    else options.logger.debug({ target: verdict.target, verdict: verdict.verdict, readMs }, `publish guard of ${verdict.target}: ${verdict.reason}`);
  }
  const tripped = verdicts.some((verdict) => verdict.verdict === 'trip');
  const report: GuardReport = { tripped, overridden: tripped && options.allowShrink === true, verdicts };
  if (tripped && !report.overridden) throw new PublishGuardTrippedError(options.jobName, report);
  if (report.overridden) {
    options.logger.warn(
      { guard: report },
      `job ${options.jobName}: publish guard tripped and overridden by ${ALLOW_SHRINK_FLAG}: ${verdicts
        .filter((v) => v.verdict === 'trip')
        .map((v) => `${v.target}: ${v.reason}`)
        .join('; ')}`,
    );
  }
  return report;
}

/**
 * The rules' verdict; a trip over a target whose holding did not say which run wrote it is judged
 * again with the run its kind finds (`writtenBy`), so the refusal says what changed in the job
 * since. That read failing only leaves the refusal without it (logged).
 */
async function judgeExplained(
  check: GuardCheck,
  holding: TargetHolding,
  exportedRows: number,
  options: { openWindow?: boolean; definition?: JobDefinition | undefined },
  logger: Logger,
): Promise<GuardVerdict> {
  const verdict = judgeGuard(check.settings, holding, exportedRows, options);
  if (verdict.verdict !== 'trip' || holding.writtenBy !== undefined || check.writtenBy === undefined || options.definition === undefined) return verdict;
  try {
    const writtenBy = await check.writtenBy();
    return writtenBy === undefined ? verdict : judgeGuard(check.settings, { ...holding, writtenBy }, exportedRows, options);
  } catch (error) {
    logger.warn(
      { target: holding.target },
      `publish guard of ${holding.target}: which run wrote it could not be read (${messageOf(error)}); the refusal stands`,
    );
    return verdict;
  }
}

/**
 * The guard's judgement in the trace: one event per target on the tile's span, with its verdict,
 * rule, counts and what changed in the job's definition since the run that wrote it.
 */
function traceVerdicts(verdicts: readonly GuardVerdict[], allowShrink: boolean): void {
  const span = telemetry().current();
  for (const verdict of verdicts) {
    span.addEvent(EVENTS.publishGuard, {
      [ATTR.sinkTarget]: verdict.target,
      [ATTR.guardVerdict]: verdict.verdict === 'trip' && allowShrink ? 'overridden' : verdict.verdict,
      [ATTR.guardRule]: verdict.rule,
      [ATTR.guardHeld]: verdict.held,
      [ATTR.guardExported]: verdict.exported,
      [ATTR.guardReason]: verdict.reason,
      [ATTR.guardChangedSinceRun]: verdict.changedSince?.runId,
    });
  }
}

/**
 * A sink's guard verdict against its target as it is now, for an export of `exportedRows` (`plan`
 * and `check`: the tile's totalRows of page 0). Undefined when the sink has no guard. Reads, never
 * writes; a target that cannot be read is `unknown`, as at run time.
 */
export async function guardVerdictOf(
  sink: Sink,
  context: SinkRunContext,
  exportedRows: number,
  definition?: JobDefinition,
  exported?: { rows: readonly TypedRow[] },
): Promise<GuardVerdict | undefined> {
  const check = sink.guardCheck?.(context, exported);
  if (check === undefined) return undefined;
  if (check.settings === undefined) return judgeGuard(undefined, { target: '', effect: 'replace', rows: undefined, readFrom: '' }, exportedRows);
  try {
    return await judgeExplained(check, await check.holding(), exportedRows, { definition }, context.logger);
  } catch (error) {
    return { target: '', verdict: 'unknown', exported: exportedRows, reason: `what the target holds could not be read (${messageOf(error)})` };
  }
}

/**
 * Every row a run now would export, typed as the run types them, when page 0 holds them all
 * (`plan` and `check` read no other page): what a guard that compares only what a run replaces
 * (an Iceberg table's days) needs. Undefined when more pages follow, or when a value would fail
 * the run before any guard is asked.
 */
export function wholeExportOf(
  job: Pick<LoadedJob, 'name' | 'timezone' | 'onInvalidValue'>,
  page: { rows: readonly (readonly unknown[])[]; navigation: { totalRows: number } },
  columns: readonly Column[],
): { rows: TypedRow[] } | undefined {
  if (page.rows.length !== page.navigation.totalRows) return undefined;
  try {
    const typed = toTypedRows(page.rows, columns, {
      timezone: job.timezone,
      onInvalidValue: job.onInvalidValue,
      jobName: job.name,
      pageNumber: 0,
      firstRowIndex: 0,
    });
    return { rows: typed.rows };
  } catch {
    return undefined;
  }
}
