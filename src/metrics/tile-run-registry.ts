import { Gauge, Pushgateway, Registry } from 'prom-client';
import { redactText } from '../redaction.js';
import { HELP, METRICS, type TileRunMetrics } from './metric-names.js';

// prom-client's side of a push; push-metrics.ts imports this module only when it pushes.

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
  set('guardTripped', run.guard?.tripped === true && !run.guard.overridden ? 1 : 0);
  if (intervalSeconds !== undefined) set('scheduleInterval', intervalSeconds);
  // Failures by code: one series per push, so a POST (which replaces every series of a name in
  // the group) leaves only the last run's code; a success clears it with code="" and 0.
  const code = succeeded ? '' : redactText(run.error?.code ?? 'unknown');
  new Gauge({ name: METRICS.lastRunError, help: HELP.lastRunError, labelNames: ['code'], registers: [registry] }).set({ code }, succeeded ? 0 : 1);
  // Where the time went: one series per phase of this run (a POST replaces the name's series, so a phase the last run lacked is gone).
  const phases = Object.entries(run.timings ?? {});
  if (phases.length > 0) {
    const gauge = new Gauge({ name: METRICS.phaseSeconds, help: HELP.phaseSeconds, labelNames: ['phase'], registers: [registry] });
    for (const [phase, ms] of phases) gauge.set({ phase: redactText(phase) }, ms / 1000);
  }
  return registry;
}

/** POSTs the registry to the Pushgateway's group (see push-metrics.ts for why POST). */
export async function pushAdd(
  pushgatewayUrl: string,
  timeoutMs: number,
  registry: Registry,
  jobName: string,
  groupings: Record<string, string>,
): Promise<void> {
  // The grouping labels are the URL's path and the label values the body's: both redacted (src/redaction.ts).
  const redacted = Object.fromEntries(Object.entries(groupings).map(([name, value]) => [name, redactText(value)]));
  await new Pushgateway(pushgatewayUrl, { timeout: timeoutMs }, registry).pushAdd({ jobName: redactText(jobName), groupings: redacted });
}
