import { ConfigError } from '../config/config-error.js';
import type { LoadedJob } from '../config/load-config.js';
import { APP, BACKFILL_LIMITS, CONTAINER, CRONJOB_LIMITS, EXIT_BAD_CONFIG, MAX_CRONJOB_NAME, NAMESPACE } from './deploy-settings.js';
import type { PodPlan } from './pod-template.js';

type Manifest = Record<string, unknown>;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const CRON_MACROS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);

/** `incidents_by_month_severity` → `tilehouse-incidents-by-month-severity`. */
export function cronJobName(jobName: string): string {
  return `${APP}-${jobName.replaceAll('_', '-')}`;
}

function labels(component: string, jobName: string): Manifest {
  return { 'app.kubernetes.io/name': APP, 'app.kubernetes.io/component': component, 'tilehouse.dev/job': jobName };
}

// Bad config is not retried: exit 2 fails the Job at once. A pod stopped by a node drain or
// preemption (DisruptionTarget) does not count against backoffLimit.
const podFailurePolicy = {
  rules: [
    { action: 'FailJob', onExitCodes: { containerName: CONTAINER, operator: 'In', values: [EXIT_BAD_CONFIG] } },
    { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] },
  ],
};

/**
 * Checks that a job's schedule can be a CronJob: Kubernetes takes five cron fields or a macro,
 * while the in-process scheduler (croner) also accepts seconds and L/W/# forms.
 */
function kubernetesSchedule(job: LoadedJob): string {
  const cron = job.schedule!.cron.trim();
  const problem = (message: string) => ConfigError.single({ file: job.file, field: 'schedule.cron', value: JSON.stringify(cron), message });
  if (cron.startsWith('@')) {
    if (!CRON_MACROS.has(cron)) throw problem(`Kubernetes knows the macros ${[...CRON_MACROS].join(' ')}`);
    return cron;
  }
  const fields = cron.split(/\s+/);
  if (fields.length !== 5) throw problem(`a Kubernetes CronJob takes 5 fields (minute hour day month weekday); this has ${fields.length}`);
  if (/(TZ|#)|(^|[\s,])\d*[LW]([\s,]|$)|\bLW\b/.test(cron))
    throw problem('L, W, # and TZ= are croner extensions that Kubernetes does not read; timezone goes in schedule.timezone');
  return cron;
}

/** One CronJob per scheduled job; a job without a schedule gets none (it runs on demand). */
export function cronJobFor(job: LoadedJob, pod: PodPlan): Manifest | undefined {
  if (job.schedule === undefined) return undefined;
  const name = cronJobName(job.name);
  if (name.length > MAX_CRONJOB_NAME || !DNS_LABEL.test(name)) {
    throw ConfigError.single({
      file: job.file,
      field: 'name',
      value: JSON.stringify(job.name),
      message: `the CronJob would be named ${name}: at most ${MAX_CRONJOB_NAME} characters, not ending in "_" (Kubernetes names its Jobs after it)`,
    });
  }
  const jobLabels = labels('export', job.name);
  return {
    apiVersion: 'batch/v1',
    kind: 'CronJob',
    metadata: { name, labels: jobLabels },
    spec: {
      schedule: kubernetesSchedule(job),
      timeZone: job.schedule.timezone,
      // Two runs of one tile would race for the same output.
      concurrencyPolicy: 'Forbid',
      startingDeadlineSeconds: CRONJOB_LIMITS.startingDeadlineSeconds,
      successfulJobsHistoryLimit: CRONJOB_LIMITS.successfulJobsHistoryLimit,
      failedJobsHistoryLimit: CRONJOB_LIMITS.failedJobsHistoryLimit,
      jobTemplate: {
        metadata: { labels: jobLabels },
        spec: {
          backoffLimit: CRONJOB_LIMITS.backoffLimit,
          activeDeadlineSeconds: CRONJOB_LIMITS.activeDeadlineSeconds,
          ttlSecondsAfterFinished: CRONJOB_LIMITS.ttlSecondsAfterFinished,
          podFailurePolicy,
          template: {
            metadata: { labels: jobLabels },
            spec: pod.spec(['run', '--job', job.name], [], job.tempStorage),
          },
        },
      },
    },
  };
}

export const BACKFILL_PLACEHOLDERS = { tile: 'NAME', date: 'YYYY-MM-DD' } as const;

/** A Job to fill in and create by hand; `generateName` gives each backfill its own name. */
export function backfillJob(pod: PodPlan): Manifest {
  const jobLabels = labels('backfill', BACKFILL_PLACEHOLDERS.tile);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { generateName: `${APP}-backfill-`, namespace: NAMESPACE, labels: jobLabels },
    spec: {
      backoffLimit: BACKFILL_LIMITS.backoffLimit,
      activeDeadlineSeconds: BACKFILL_LIMITS.activeDeadlineSeconds,
      ttlSecondsAfterFinished: BACKFILL_LIMITS.ttlSecondsAfterFinished,
      podFailurePolicy,
      template: {
        metadata: { labels: jobLabels },
        spec: pod.spec(['backfill', '--job', BACKFILL_PLACEHOLDERS.tile, '--from', BACKFILL_PLACEHOLDERS.date, '--to', BACKFILL_PLACEHOLDERS.date]),
      },
    },
  };
}

export interface IndexedBackfill {
  job: LoadedJob;
  from: string;
  to: string;
  step: string;
  /** Indexes (pods that each run a contiguous share of the windows). */
  completions: number;
  /** Indexes running at once. */
  parallelism: number;
  /** The pods skip windows already done (backfill --resume). */
  resume?: boolean;
  /**
   * A W3C traceparent every pod gets as $TRACEPARENT: with telemetry on, all of the Job's pods
   * are one trace (each pod's run a child of this parent, which no pod exports).
   */
  traceparent?: string;
}

/**
 * A backfill as an Indexed Job (`completionMode: Indexed`): pod i runs share i of `completions`
 * contiguous shares of the windows. Kubernetes sets $JOB_COMPLETION_INDEX; the share count, which
 * it does not pass on, travels as $TILEHOUSE_SHARD_COUNT; the run id is the Job's own name (the
 * `batch.kubernetes.io/job-name` label, Kubernetes >= 1.27), so every pod of one Job, and a pod
 * retried, runs each window under the same id.
 */
export function indexedBackfillJob(pod: PodPlan, backfill: IndexedBackfill): Manifest {
  const jobLabels = labels('backfill', backfill.job.name);
  const prefix = `${APP}-backfill-${backfill.job.name.replaceAll('_', '-')}`.slice(0, 40).replace(/-+$/, '');
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { generateName: `${prefix}-`, namespace: NAMESPACE, labels: jobLabels },
    spec: {
      completionMode: 'Indexed',
      completions: backfill.completions,
      parallelism: backfill.parallelism,
      backoffLimitPerIndex: BACKFILL_LIMITS.backoffLimitPerIndex,
      activeDeadlineSeconds: BACKFILL_LIMITS.activeDeadlineSeconds,
      ttlSecondsAfterFinished: BACKFILL_LIMITS.ttlSecondsAfterFinished,
      // FailIndex, not FailJob: with backoffLimitPerIndex, Kubernetes takes only per-index actions;
      // a bad config fails every index at its first pod anyway.
      podFailurePolicy: {
        rules: [
          { action: 'FailIndex', onExitCodes: { containerName: CONTAINER, operator: 'In', values: [EXIT_BAD_CONFIG] } },
          { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] },
        ],
      },
      template: {
        metadata: { labels: jobLabels },
        spec: pod.spec(
          [
            'backfill',
            '--job',
            backfill.job.name,
            '--from',
            backfill.from,
            '--to',
            backfill.to,
            '--step',
            backfill.step,
            ...(backfill.resume ? ['--resume'] : []),
          ],
          [
            { name: 'TILEHOUSE_SHARD_COUNT', value: String(backfill.completions) },
            { name: 'TILEHOUSE_RUN_ID', valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } } },
            ...(backfill.traceparent === undefined ? [] : [{ name: 'TRACEPARENT', value: backfill.traceparent }]),
          ],
          backfill.job.tempStorage,
        ),
      },
    },
  };
}
