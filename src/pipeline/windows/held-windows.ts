import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import { TilehouseError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { SinkFactoryOptions } from '../../sinks/build-sinks.js';
import { sinkKinds, type WindowStateReader } from '../../sinks/registry.js';
import type { Sink } from '../../sinks/sink.js';
import type { DateWindow, TargetState } from './date-windows.js';

/**
 * What the targets of a job hold, window by window, as the windows family reads it: each sink
 * kind gives its readers (the registry's `windowStateReaders`); these functions only combine
 * their answers, so they take readers and a fake one can stand in for a kind.
 */

/** What each target holds of `windows`, read one target after another, in the readers' order. */
export async function targetStatesOf(readers: readonly WindowStateReader[], windows: readonly DateWindow[]): Promise<TargetState[]> {
  const states: TargetState[] = [];
  for (const reader of readers) {
    const { done, open } = await reader.heldWindows(windows);
    states.push({ target: reader.target, done, open });
  }
  return states;
}

/**
 * The first days of the windows every target holds done; a window any target holds only open, or
 * not at all, is not done. No reader at all holds nothing: an intersection over zero targets
 * would count every window done, and a `--resume` would skip the whole backfill (exit 0, nothing
 * written).
 */
export async function windowsDoneEverywhere(readers: readonly WindowStateReader[], windows: readonly DateWindow[]): Promise<Set<string>> {
  if (readers.length === 0) return new Set();
  let done = new Set(windows.map((window) => window.from));
  for (const reader of readers) {
    // An open window (published before its day ended) is not done: it runs again.
    const { done: finished } = await reader.heldWindows(windows);
    done = new Set([...done].filter((from) => finished.has(from)));
  }
  return done;
}

/** `backfill --resume` for a job whose targets cannot tell a finished window (a CSV sink without manifests, the run ledger off). */
export class ResumeUnsupportedError extends TilehouseError {
  readonly code = 'backfill_resume_unsupported';
}

/**
 * `backfill --resume`: the windows every sink of the job shows as done, to be skipped. A CSV sink
 * shows it with a manifest beside the window's file whose sha256 matches the file (so it needs
 * `manifest: true`); a BigQuery sink with its latest `_tilehouse_runs` row for the window saying
 * succeeded and published. A window any sink cannot vouch for runs again (re-running is safe:
 * each window replaces exactly its own file or partition).
 */
export async function doneWindowsOf(
  job: LoadedJob,
  sinks: readonly Sink[],
  windows: readonly DateWindow[],
  environment: EnvironmentConfig,
  options: SinkFactoryOptions,
  logger: Logger,
): Promise<Set<string>> {
  for (const kind of sinkKinds) {
    const refusal = kind.resumeRefusal(job, environment);
    if (refusal !== undefined) throw new ResumeUnsupportedError(refusal);
  }
  const readers: WindowStateReader[] = [];
  for (const kind of sinkKinds) {
    const configured = job.sinks.filter((sink) => sink.type === kind.type).length;
    if (configured === 0) continue;
    const ofKind = await kind.windowStateReaders(job, sinks, environment, options, logger);
    // A sink no reader answers for would drop out of the intersection, and the windows the
    // others hold would be skipped for it too: refuse rather than guess.
    if (ofKind.length < configured) throw new ResumeUnsupportedError(resumeUnreadable(job, kind.type, configured, ofKind.length));
    readers.push(...ofKind);
  }
  return windowsDoneEverywhere(readers, windows);
}

function resumeUnreadable(job: LoadedJob, type: string, configured: number, read: number): string {
  return `backfill: --resume cannot tell which windows the ${type} sinks of ${job.name} hold: ${read} of ${configured} give a window state to read; run without --resume`;
}
