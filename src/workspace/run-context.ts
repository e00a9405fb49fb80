import type { Logger } from '../log.js';
import { backfillRunMetrics, metricsPusherFor } from '../metrics/push-metrics.js';
import type { RetrySettings } from '../pipeline/source-session.js';
import type { WindowMetrics, WindowRunContext } from '../pipeline/windows/window-batch.js';
import type { SinkFactoryOptions } from '../sinks/build-sinks.js';
import type { RunnableWorkspace } from '../workspace/load-workspace.js';
import { telemetry } from '../telemetry/telemetry.js';

/** What tests and the bench put in place of production defaults (see the CLI's seams). */
export interface RunSeams {
  sinkOptions?: SinkFactoryOptions;
  retry?: RetrySettings;
  /** The clock a run starts by and `status` judges lateness by (tests: a night replayed at its own time). */
  now?: () => Date;
}

/** A run of windows pushes to the Pushgateway as one run of its job (backfillRunMetrics), when metrics are configured. */
export function windowMetricsOf(workspace: Pick<RunnableWorkspace, 'environment'>, logger: Logger): WindowMetrics | undefined {
  const pusher = metricsPusherFor(workspace.environment.metrics, logger);
  // OpenTelemetry's run metrics (when a command opened it) take the same one run of windows.
  const traced = telemetry();
  if (pusher === undefined && !traced.enabled) return undefined;
  return {
    pushWindowRun: async (job, tiles, totals, schedule, grouping) => {
      const run = backfillRunMetrics(job, tiles, totals);
      traced.recordRun({ ...run, errorCode: tiles.find((tile) => tile.error !== undefined)?.error?.code, mode: grouping?.mode });
      return pusher?.pushTileRun(run, schedule, grouping);
    },
  };
}

/** The workspace, the process's stop signal and the seams, as the windows family takes them. */
export function windowRunContextOf(workspace: RunnableWorkspace, logger: Logger, signal: AbortSignal | undefined, seams: RunSeams): WindowRunContext {
  const metrics = windowMetricsOf(workspace, logger);
  return {
    environment: workspace.environment,
    credentials: workspace.credentials,
    configFile: workspace.configFile,
    logger,
    signal,
    retry: seams.retry,
    sinkOptions: seams.sinkOptions,
    ...(metrics === undefined ? {} : { metrics }),
  };
}
