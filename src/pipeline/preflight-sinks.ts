import type { AccessCheckContext, Sink, SinkWindow, WindowCheckContext } from '../sinks/sink.js';

/**
 * Every sink's cheap checks (Sink.checkAccess: a local directory that cannot be written, a bucket
 * that is missing or may not be written), run before the first export request so that a bad
 * target costs no source traffic and fails its job naming the target (issue 26). Sinks are
 * checked one after the other: the first bad target is the error.
 */
export async function preflightSinks(sinks: readonly Sink[], context: AccessCheckContext): Promise<void> {
  for (const sink of sinks) {
    const note = await sink.checkAccess?.(context);
    if (note !== undefined) context.logger.debug({ job: context.jobName, note }, `target checked: ${note}`);
  }
}

/**
 * The check once for runs that share their sinks and targets' buckets and directories (the
 * windows of one backfill): every caller awaits the same outcome, so a bad target fails each
 * window without a request at the source, and a good one is asked about once.
 */
export function preflightOnce(sinks: readonly Sink[], context: AccessCheckContext): () => Promise<void> {
  let outcome: Promise<void> | undefined;
  return () => (outcome ??= preflightSinks(sinks, context));
}

/**
 * Every sink's check of a backfill's windows (Sink.checkWindows), before the first page: a
 * target that would drop the windows' rows (BigQuery's partition expiration) refuses the backfill
 * naming its setting, and costs no source traffic.
 */
export async function preflightWindows(sinks: readonly Sink[], windows: readonly SinkWindow[], context: WindowCheckContext): Promise<void> {
  if (windows.length === 0) return;
  for (const sink of sinks) await sink.checkWindows?.(windows, context);
}
