import packageJson from '../../package.json' with { type: 'json' };
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { otelSettingsOf } from './otel-settings.js';
import { EVENTS, NO_TELEMETRY, useTelemetry, type Attributes, type RunSpan, type SpanFailure, type Telemetry } from './telemetry.js';

/**
 * Opens the process's telemetry from the OTEL_* variables: the no-op when they turn nothing on
 * (nothing of OpenTelemetry is imported then), else the OpenTelemetry implementation, loaded here
 * by a dynamic import and installed as `telemetry()`. What the variables ask for that tilehouse
 * cannot do is logged, once each.
 */
export async function openTelemetry(env: NodeJS.ProcessEnv, logger: Logger, resource: Attributes): Promise<Telemetry> {
  const settings = otelSettingsOf(env);
  for (const warning of settings.warnings) logger.warn(`telemetry: ${warning}`);
  // `tilehouse validate` refuses these; a run goes on without the signal rather than send the password.
  for (const refusal of settings.refusals) logger.warn(`telemetry: ${refusal}; nothing is exported there`);
  if (settings.traces === undefined && settings.metrics === undefined) return NO_TELEMETRY;
  const { OtelTelemetry } = await import('./otel-telemetry.js');
  const opened = new OtelTelemetry({ settings, env, logger, version: packageJson.version, resource });
  useTelemetry(opened);
  return opened;
}

/** A command's run as one trace: its root span, ended with the outcome, then everything flushed. */
export interface RunTelemetry extends Pick<RunSpan, 'within' | 'setAttributes'> {
  /**
   * Ends the root span (ERROR with `failure`, or with `run_stopped` and the signal's reason when
   * the run was stopped) and flushes spans and metrics within their bound. Never throws.
   */
  finish(exitCode: number, failure?: SpanFailure): Promise<void>;
}

/**
 * Opens telemetry for a command that runs jobs (`run`, `backfill`) and starts its root span; a
 * SIGTERM or SIGINT is an event on it the moment it arrives.
 */
export async function openRunTelemetry(env: NodeJS.ProcessEnv, logger: Logger, signal: AbortSignal | undefined, attributes: Attributes): Promise<RunTelemetry> {
  const opened = await openTelemetry(env, logger, attributes);
  const root = opened.startRun(attributes);
  const onAbort = () => root.addEvent(EVENTS.signal, { reason: messageOf(signal?.reason) });
  if (opened.enabled) signal?.addEventListener('abort', onAbort, { once: true });
  return {
    within: (fn) => root.within(fn),
    setAttributes: (more) => root.setAttributes(more),
    finish: async (exitCode, failure) => {
      signal?.removeEventListener('abort', onAbort);
      const stopped = signal?.aborted === true ? { code: 'run_stopped', message: messageOf(signal.reason) } : undefined;
      root.end(exitCode, stopped ?? failure);
      await opened.shutdown();
      if (opened.enabled) useTelemetry(NO_TELEMETRY);
    },
  };
}
