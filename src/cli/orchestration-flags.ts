import type { Shard } from '../pipeline/windows/shard-windows.js';
import { UsageError } from './command.js';
import { isCalendarDate } from '../value-types/civil-date.js';

/**
 * What an orchestrator passes in (Argo, Airflow's KubernetesPodOperator, Dagster Pipes, Cloud Run
 * jobs, an Indexed Job): the run id, the nominal window a run stands for, the worker's share of a
 * backfill. Flags win over the environment; everything is checked before anything runs.
 */

export const ORCHESTRATION_HELP = `      --run-id ID      the run's id (default: $TILEHOUSE_RUN_ID, else a new one); in the summary,
                       the metrics, file names and BigQuery job ids
      --window-start T the nominal window this run stands for (an orchestrator's data interval),
      --window-end T   RFC 3339 date-times or dates, both or neither; echoed in the summary`;

/** --run-id, else $TILEHOUSE_RUN_ID (an Argo `{{workflow.uid}}`, a Job's name from the downward API). */
export function runIdOf(command: string, flag: string | undefined, env: NodeJS.ProcessEnv, pattern: RegExp, limit: number): string | undefined {
  const fromEnv = env.TILEHOUSE_RUN_ID === '' ? undefined : env.TILEHOUSE_RUN_ID;
  const runId = flag ?? fromEnv;
  if (runId !== undefined && !pattern.test(runId)) {
    const origin = flag !== undefined ? '--run-id' : '$TILEHOUSE_RUN_ID';
    throw UsageError.of(`${command}: ${origin} must be 1-${limit} letters, digits, '.', '_' or '-', got ${JSON.stringify(runId)}`);
  }
  return runId;
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/;

function instantOf(text: string): number {
  if (isCalendarDate(text)) return Date.parse(`${text}T00:00:00Z`);
  // Date.parse rolls 2026-02-30 over to March 2; the calendar rule refuses it.
  if (!DATE_TIME.test(text) || !isCalendarDate(text.slice(0, 10))) return Number.NaN;
  return Date.parse(text.replace(' ', 'T'));
}

/** --window-start / --window-end: both or neither, start before end, echoed as given. */
export function nominalWindowOf(
  command: string,
  values: { 'window-start'?: string | undefined; 'window-end'?: string | undefined },
): { start: string; end: string } | null {
  const start = values['window-start'];
  const end = values['window-end'];
  if (start === undefined && end === undefined) return null;
  if (start === undefined || end === undefined)
    throw UsageError.of(`${command}: --window-start and --window-end come together; got only --window-${start === undefined ? 'end' : 'start'}`);
  for (const [flag, value] of [
    ['--window-start', start],
    ['--window-end', end],
  ] as const) {
    if (Number.isNaN(instantOf(value)))
      throw UsageError.of(
        `${command}: ${flag} must be an RFC 3339 date-time with an offset (2026-06-01T06:00:00Z) or a date (2026-06-01), got ${JSON.stringify(value)}`,
      );
  }
  if (instantOf(start) >= instantOf(end)) throw UsageError.of(`${command}: --window-start (${start}) must be before --window-end (${end})`);
  return { start, end };
}

function wholeNumber(text: string): number {
  return /^\d{1,6}$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
}

/**
 * This worker's share of a backfill: --shard-index/--shard-count, else an Indexed Job's
 * $JOB_COMPLETION_INDEX with $TILEHOUSE_SHARD_COUNT (the Job's completions, which Kubernetes does
 * not pass to the pod; `tilehouse k8s --backfill` sets it), else a Cloud Run job's
 * $CLOUD_RUN_TASK_INDEX / $CLOUD_RUN_TASK_COUNT. Undefined: all windows.
 */
export function shardOf(
  command: string,
  values: { 'shard-index'?: string | undefined; 'shard-count'?: string | undefined },
  env: NodeJS.ProcessEnv,
): Shard | undefined {
  const sources: Array<[string, string | undefined, string, string | undefined]> = [
    ['--shard-index', values['shard-index'], '--shard-count', values['shard-count']],
    ['$JOB_COMPLETION_INDEX', env.JOB_COMPLETION_INDEX, '$TILEHOUSE_SHARD_COUNT', env.TILEHOUSE_SHARD_COUNT],
    ['$CLOUD_RUN_TASK_INDEX', env.CLOUD_RUN_TASK_INDEX, '$CLOUD_RUN_TASK_COUNT', env.CLOUD_RUN_TASK_COUNT],
  ];
  for (const [indexName, indexText, countName, countText] of sources) {
    if (indexText === undefined && countText === undefined) continue;
    if (indexText === undefined || countText === undefined) {
      throw UsageError.of(
        `${command}: ${indexText === undefined ? `${countName} is set but not ${indexName}` : `${indexName} is set but not ${countName}`}: a share of the windows needs both`,
      );
    }
    const index = wholeNumber(indexText);
    const count = wholeNumber(countText);
    if (!(count >= 1)) throw UsageError.of(`${command}: ${countName} must be a whole number >= 1, got ${JSON.stringify(countText)}`);
    if (!(index >= 0 && index < count))
      throw UsageError.of(`${command}: ${indexName} must be from 0 to ${count - 1} (${countName} is ${count}), got ${JSON.stringify(indexText)}`);
    return { index, count };
  }
  return undefined;
}

/** The --config/--jobs flags a printed command needs to act on the same workspace. */
export function workspaceFlags(values: { config?: string; jobs?: string }): string[] {
  return [...(values.config ? ['--config', values.config] : []), ...(values.jobs ? ['--jobs', values.jobs] : [])];
}

export const ALLOW_SHRINK_HELP = `      --allow-shrink   publish even where a publish guard trips (an export with no rows, or far fewer
                       than the target holds or its recent runs brought): for a run meant to shrink;
                       also $TILEHOUSE_ALLOW_SHRINK=1 (a manual Kubernetes run). Recorded in the
                       summary and the run ledger`;

/** --allow-shrink, else $TILEHOUSE_ALLOW_SHRINK (1 or true; anything else that is set is a usage error). */
export function allowShrinkOf(command: string, flag: boolean | undefined, env: NodeJS.ProcessEnv): boolean {
  if (flag === true) return true;
  const value = env.TILEHOUSE_ALLOW_SHRINK;
  if (value === undefined || value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw UsageError.of(`${command}: $TILEHOUSE_ALLOW_SHRINK must be 1 or true (or 0, false, empty), got ${JSON.stringify(value)}`);
}
