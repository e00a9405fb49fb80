import { Cron } from 'croner';
import { Gauge, Pushgateway, Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { messageOf } from '../errors.js';

/**
 * Metrics of batch runs for Prometheus, pushed to a Pushgateway at the end of each tile run (a
 * CronJob's pod is gone before any scrape could reach it). One group per job: grouping key
 * `{job="<job name>"}` plus the configured labels. Every metric describes the job's latest run,
 * so they are gauges, not counters.
 *
 * A failure must never overwrite the time of the last success (an alert on "no success for N
 * intervals" would go quiet after any run). The Pushgateway's PUT replaces the whole group and
 * would drop it; POST replaces only the metric names it carries. So every push is a POST, and a
 * failed run's push simply does not carry tilehouse_last_success_timestamp_seconds.
 */

/** The metric names, also read by the PrometheusRule test (k8s/prometheus-rules.yaml). */
export const METRICS = {
  lastSuccess: 'tilehouse_last_success_timestamp_seconds',
  lastFailure: 'tilehouse_last_failure_timestamp_seconds',
  lastRun: 'tilehouse_last_run_timestamp_seconds',
  lastRunSuccess: 'tilehouse_last_run_success',
  rows: 'tilehouse_last_run_rows',
  pages: 'tilehouse_last_run_pages',
  bytes: 'tilehouse_last_run_bytes',
  duration: 'tilehouse_last_run_duration_seconds',
  retries: 'tilehouse_last_run_retries',
  throttled: 'tilehouse_last_run_throttled_responses',
  tokenFetches: 'tilehouse_last_run_token_fetches',
  scheduleInterval: 'tilehouse_schedule_interval_seconds',
} as const;

const HELP: Record<keyof typeof METRICS, string> = {
  lastSuccess: 'When the job last succeeded (Unix seconds); only successful runs set it',
  lastFailure: 'When the job last failed or was partially published (Unix seconds); only such runs set it',
  lastRun: 'When the job last finished a run, whatever its outcome (Unix seconds)',
  lastRunSuccess: '1 when the last run succeeded, 0 when it failed or was partially published',
  rows: 'Rows written by the last run',
  pages: 'Export pages read by the last run',
  bytes: 'Response bytes received from the source by the last run',
  duration: 'Duration of the last run in seconds',
  retries: 'Retried source requests in the last run',
  throttled: 'HTTP 429 answers from the source in the last run (token endpoint included)',
  tokenFetches: 'Access tokens the last run fetched for this job (0: it used the run\'s shared token)',
  scheduleInterval: 'Seconds between two scheduled runs of the job (from its cron), for "no success in N intervals" alerts',
};

/** What a tile run reports; a JobRunSummary has these fields. */
export interface TileRunMetrics {
  job: string;
  status: 'succeeded' | 'failed' | 'partially_published';
  rows: number;
  pages: number;
  bytes: number;
  durationMs: number;
  retries: number;
  throttled: number;
  tokenFetches: number;
}

/**
 * Seconds between the next two runs of a cron in its timezone (a daily job: 86400), or undefined
 * for a job without a schedule. The alert "no success in N intervals" divides by it, so it is
 * pushed with the run: Prometheus knows no cron.
 */
export function scheduleIntervalSeconds(schedule: { cron: string; timezone: string } | undefined, from: Date = new Date()): number | undefined {
  if (schedule === undefined) return undefined;
  const [next, after] = new Cron(schedule.cron, { timezone: schedule.timezone, paused: true }).nextRuns(2, from);
  return next === undefined || after === undefined ? undefined : (after.getTime() - next.getTime()) / 1000;
}

export interface MetricsPusherOptions {
  pushgatewayUrl: string;
  timeoutMs: number;
  /** Extra grouping labels (environment, cluster). */
  labels: Record<string, string>;
  logger: Logger;
  now?: () => number;
}

/** The registry a tile run pushes: fresh per push, so nothing of an earlier run leaks into it. */
export function tileRunRegistry(run: TileRunMetrics, finishedAtMs: number, intervalSeconds?: number): Registry {
  const registry = new Registry();
  const set = (key: keyof typeof METRICS, value: number) => {
    new Gauge({ name: METRICS[key], help: HELP[key], registers: [registry] }).set(value);
  };
  const seconds = finishedAtMs / 1000;
  const succeeded = run.status === 'succeeded';
  if (succeeded) set('lastSuccess', seconds);
  else set('lastFailure', seconds);
  set('lastRun', seconds);
  set('lastRunSuccess', succeeded ? 1 : 0);
  set('rows', run.rows);
  set('pages', run.pages);
  set('bytes', run.bytes);
  set('duration', run.durationMs / 1000);
  set('retries', run.retries);
  set('throttled', run.throttled);
  set('tokenFetches', run.tokenFetches);
  if (intervalSeconds !== undefined) set('scheduleInterval', intervalSeconds);
  return registry;
}

export class MetricsPusher {
  constructor(private readonly options: MetricsPusherOptions) {}

  /** Pushes one tile run's metrics (POST: see the module comment). Never throws: a failed push is logged. */
  async pushTileRun(run: TileRunMetrics, schedule?: { cron: string; timezone: string }, grouping: Record<string, string> = {}): Promise<boolean> {
    const { pushgatewayUrl, timeoutMs, labels, logger } = this.options;
    const registry = tileRunRegistry(run, (this.options.now ?? Date.now)(), scheduleIntervalSeconds(schedule));
    const gateway = new Pushgateway(pushgatewayUrl, { timeout: timeoutMs }, registry);
    try {
      await gateway.pushAdd({ jobName: run.job, groupings: { ...labels, ...grouping } });
      logger.debug({ pushgateway: pushgatewayUrl, status: run.status }, 'metrics pushed');
      return true;
    } catch (error) {
      logger.warn({ pushgateway: pushgatewayUrl, err: messageOf(error) }, `metrics push for ${run.job} failed: ${messageOf(error)}; the run's outcome is unchanged`);
      return false;
    }
  }
}

/**
 * A backfill as one run for its metrics: pushed once at its end to the group
 * `{job, mode="backfill"}`, apart from the scheduled runs' group, so a backfill of last year
 * neither sets nor spoils the freshness the schedule's alerts watch. Succeeded only when every
 * window did. Its token fetches are the backfill's (the source clock's fetch is no window's).
 */
export function backfillRunMetrics(job: string, windows: readonly TileRunMetrics[], totals: { durationMs: number; tokenFetches: number }): TileRunMetrics {
  const { durationMs, tokenFetches } = totals;
  const sum = (key: 'rows' | 'pages' | 'bytes' | 'retries' | 'throttled') => windows.reduce((total, window) => total + window[key], 0);
  const status = windows.some((window) => window.status === 'partially_published')
    ? 'partially_published'
    : windows.some((window) => window.status === 'failed')
      ? 'failed'
      : 'succeeded';
  return { job, status, rows: sum('rows'), pages: sum('pages'), bytes: sum('bytes'), durationMs, retries: sum('retries'), throttled: sum('throttled'), tokenFetches };
}

/** A pusher when the environment configures a Pushgateway, else undefined (metrics are off by default). */
export function metricsPusherFor(config: { pushgatewayUrl?: string | undefined; timeoutMs: number; labels: Record<string, string> } | undefined, logger: Logger): MetricsPusher | undefined {
  if (config?.pushgatewayUrl === undefined) return undefined;
  return new MetricsPusher({ pushgatewayUrl: config.pushgatewayUrl, timeoutMs: config.timeoutMs, labels: config.labels, logger });
}
