import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { ClientCredentials } from '../config/secrets.js';
import { isTilehouseError, messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import type { AccessCheckContext, PlanAccess, Sink, SinkPlan } from '../sinks/sink.js';
import type { RunToken } from '../source/session-token.js';
import type { ColumnType } from '../value-types/column-types.js';
import { toColumns } from '../transform/columns.js';
import type { DateWindow } from './windows/date-windows.js';
import type { WindowClock } from './windows/window-session.js';
import { newRunId } from './run-id.js';
import { openSourceSession, type RetrySettings } from './source-session.js';
import { guardVerdictOf, wholeExportOf } from './publish-guard-check.js';
import { jobDefinitionOf } from '../value-types/job-definition.js';
import { definitionSourceOf } from '../sinks/registry.js';

export interface JobPlan {
  job: string;
  tile: string;
  status: 'planned' | 'failed';
  totalRows?: number;
  columns: Array<{ name: string; header: string; type: ColumnType; sourceDataType: string }>;
  warnings: string[];
  sinks: SinkPlan[];
  error?: { code: string; message: string };
  /** An incremental job: the day windows its next run would export, and why. */
  incremental?: IncrementalPlan;
}

export interface IncrementalPlan {
  today: string | null;
  reason: string;
  windows: DateWindow[];
  /** Of windows, those exported again because of lookbackDays. */
  lookback: DateWindow[];
  /** Past maxWindows: left for the run after. */
  left: DateWindow[];
  /** Of windows, those that will not have ended on the source's clock when exported: recorded as open, exported again by the run after. */
  open: DateWindow[];
  /** Of windows, those some target holds only as open (published before the day ended): exported again. */
  reopened: DateWindow[];
  /** Whose clock placed the windows. */
  clock?: WindowClock;
  error?: { code: string; message: string };
}

export interface PlanDependencies {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  dispatcher: Dispatcher;
  logger: Logger;
  sinks: readonly Sink[];
  retry?: RetrySettings;
  signal?: AbortSignal;
  /** The token shared by the jobs planned together (default: one of this job's own). */
  runToken?: RunToken;
  /** An incremental job's first window of its next run: the sinks plan the target it would write. */
  window?: DateWindow;
}

/**
 * Fetches page 0 only (and a token, unless the shared `runToken` already holds one), derives the columns a run would write, and asks each sink how
 * its target would change. Writes nothing anywhere.
 */
export async function planJob(job: LoadedJob, deps: PlanDependencies): Promise<JobPlan> {
  const logger = deps.logger.child({ job: job.name, tile: job.tile });
  const plan: JobPlan = { job: job.name, tile: job.tile, status: 'planned', columns: [], warnings: [], sinks: [] };
  try {
    const session = openSourceSession(job, { ...deps, logger });
    const page = await session.client.fetchPage(0);
    const { columns, warnings } = toColumns(page.headers, page.dataTypes, job.columns);
    plan.totalRows = page.navigation.totalRows;
    plan.columns = columns.map(({ name, header, type, sourceDataType }) => ({ name, header, type, sourceDataType }));
    plan.warnings = warnings;
    const startedAt = new Date();
    // A tile of one page: its every row, for a guard that judges what a run replaces from them.
    const whole = deps.window === undefined && job.incremental === undefined ? wholeExportOf(job, page, columns) : undefined;
    for (const sink of deps.sinks) {
      // The schedule lets a sink count a day's runs (BigQuery's per-table daily operations).
      const schedule = job.schedule ? { schedule: { cron: job.schedule.cron, timezone: job.schedule.timezone } } : {};
      const window = deps.window === undefined ? {} : { window: { from: deps.window.from, to: deps.window.to } };
      const context = { jobName: job.name, tileId: job.tile, runId: newRunId(startedAt), startedAt, columns, logger, ...schedule, ...window };
      const planned = await sink.plan(context);
      // What `check` verifies of the target (privileges, a read-only server, the directory or
      // bucket), asked here too: a plan that says `unchanged` where every run fails is wrong.
      const access = await planAccessOf(sink, { jobName: job.name, logger, ...(deps.signal === undefined ? {} : { signal: deps.signal }) });
      const sinkPlan: SinkPlan = { ...planned, ...(access.verdict === 'refused' ? { action: 'refuse' as const } : {}), access };
      // A windowed job's page 0 is the whole tile, not a window's rows: its guards are judged per window at run time.
      const guard =
        deps.window === undefined && job.incremental === undefined
          ? await guardVerdictOf(sink, context, page.navigation.totalRows, jobDefinitionOf(definitionSourceOf(job)), whole)
          : undefined;
      plan.sinks.push(guard === undefined ? sinkPlan : { ...sinkPlan, guard });
    }
  } catch (error) {
    plan.status = 'failed';
    plan.error = { code: isTilehouseError(error) ? error.code : 'internal_error', message: messageOf(error) };
  }
  return plan;
}

/** The sink's access check as `plan` reports it: a refusal is the error a run would fail with; a sink without a check says so. */
async function planAccessOf(sink: Sink, context: AccessCheckContext): Promise<PlanAccess> {
  if (sink.checkAccess === undefined) return { verdict: 'not checked', reason: `a ${sink.kind} sink without an access check` };
  try {
    const note = await sink.checkAccess(context);
    return { verdict: 'checked', ...(note === undefined ? {} : { note }) };
  } catch (error) {
    if (!isTilehouseError(error)) throw error;
    return { verdict: 'refused', code: error.code, message: error.message };
  }
}
