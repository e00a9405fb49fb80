import { Cron } from 'croner';
import type { TileRunMetrics } from './metric-names.js';
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

export { METRICS, type TileRunMetrics } from './metric-names.js';

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

/**
 * prom-client's side of a push, loaded on the first push: most runs push nothing (metrics are off
 * by default), and loading prom-client took ~25 ms of every run's start-up, a tenth of a small
 * tile's whole run.
 */
const promClientSide = () => import('./tile-run-registry.js');

export class MetricsPusher {
  constructor(private readonly options: MetricsPusherOptions) {}

  /** Pushes one tile run's metrics (POST: see the module comment). Never throws: a failed push is logged. */
  async pushTileRun(run: TileRunMetrics, schedule?: { cron: string; timezone: string }, grouping: Record<string, string> = {}): Promise<boolean> {
    const { pushgatewayUrl, timeoutMs, labels, logger } = this.options;
    try {
      const { tileRunRegistry, pushAdd } = await promClientSide();
      const registry = tileRunRegistry(run, (this.options.now ?? Date.now)(), scheduleIntervalSeconds(schedule));
      await pushAdd(pushgatewayUrl, timeoutMs, registry, run.job, { ...labels, ...grouping });
      logger.debug({ pushgateway: pushgatewayUrl, status: run.status }, 'metrics pushed');
      return true;
    } catch (error) {
      logger.warn(
        { pushgateway: pushgatewayUrl, err: messageOf(error) },
        `metrics push for ${run.job} failed: ${messageOf(error)}; the run's outcome is unchanged`,
      );
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
  const error = windows.find((window) => window.status !== 'succeeded' && window.error !== undefined)?.error;
  const tripped = windows.some((window) => window.guard?.tripped === true && !window.guard.overridden);
  return {
    job,
    status,
    rows: sum('rows'),
    pages: sum('pages'),
    bytes: sum('bytes'),
    durationMs,
    retries: sum('retries'),
    throttled: sum('throttled'),
    tokenFetches,
    ...(error === undefined ? {} : { error }),
    ...(tripped ? { guard: { tripped, overridden: false } } : {}),
  };
}

/** A pusher when the environment configures a Pushgateway, else undefined (metrics are off by default). */
export function metricsPusherFor(
  config: { pushgatewayUrl?: string | undefined; timeoutMs: number; labels: Record<string, string> } | undefined,
  logger: Logger,
): MetricsPusher | undefined {
  if (config?.pushgatewayUrl === undefined) return undefined;
  return new MetricsPusher({ pushgatewayUrl: config.pushgatewayUrl, timeoutMs: config.timeoutMs, labels: config.labels, logger });
}
