import type { RunMetrics } from '../telemetry/telemetry.js';

/** What tilehouse pushes to a Pushgateway, by name; prom-client itself stays in tile-run-registry.ts. */

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
  lastRunError: 'tilehouse_last_run_error',
  guardTripped: 'tilehouse_last_run_publish_guard_tripped',
  phaseSeconds: 'tilehouse_last_run_phase_seconds',
} as const;

export const HELP: Record<keyof typeof METRICS, string> = {
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
  tokenFetches: "Access tokens the last run fetched for this job (0: it used the run's shared token)",
  guardTripped: '1 when a publish guard refused the last run (publish_guard_tripped: an export far smaller than its target; nothing published), else 0',
  scheduleInterval: 'Seconds between two scheduled runs of the job (from its cron), for "no success in N intervals" alerts',
  phaseSeconds:
    "Where the last run's time went, in seconds, by label phase: source (waiting on the token and pages), reading (decoding, typing, writing to the sinks), prepare:<kind> and publish:<kind>",
  lastRunError: 'The error code of the last run (label code) with value 1 when it failed, code="" with value 0 when it succeeded',
};

/**
 * What a tile run reports; a JobRunSummary has these fields. The counts are telemetry's RunMetrics
 * (one list of what a run measures), the failure and guard as the summary holds them.
 */
export interface TileRunMetrics extends Omit<RunMetrics, 'errorCode' | 'mode'> {
  /** The failure's stable code (`error.code` of the summary); absent when the run succeeded. */
  error?: { code: string } | undefined;
  /** What the publish guards said (JobRunSummary's guard): tripped and not overridden sets guardTripped. */
  guard?: { tripped: boolean; overridden: boolean } | undefined;
}
