import type { GuardSettings } from '../config/publish-guard-schema.js';
import { countNoun } from '../count-noun.js';
import { definitionChanges, describeDefinitionChanges, type DefinitionChange, type JobDefinition } from '../value-types/job-definition.js';

/**
 * The publish guard: rules that refuse to publish a valid export that is suddenly much smaller
 * than what its target holds (a filter edited in the reporting module, a permission lost, a tenant
 * half migrated). What a target holds is each kind's own knowledge (a file's manifest or the file
 * itself, a table's metadata, the run ledger's recent runs), read after prepare through the
 * writer's `guard`; the rules here are the same for every kind, and the pipeline applies them to
 * every sink of a tile before any publishes (pipeline/publish-sinks.ts).
 */

export type GuardRule = 'empty' | 'shrink' | 'recent';

/** What a target holds, as its kind reads it, for the rules. */
export interface TargetHolding {
  target: string;
  /**
   * replace: a publish replaces `rows` (a file, a table, the partitions the run writes); add: a
   * publish appends or merges, removing nothing, so only the recent runs tell a small one.
   */
  effect: 'replace' | 'add';
  /** The rows a publish would replace; undefined when there is nothing (no file, no table). */
  rows: number | undefined;
  /** Where `rows` was read (`manifest`, `CSV rows`, `Parquet footer`, `table metadata`, ...), for messages. */
  readFrom: string;
  /** Rows of the latest published runs of the job into this target, newest first (closed windows only). */
  recentRuns?: number[];
  /** Set when what the target holds could not be read: the guard cannot judge (logged, never a trip). */
  unreadable?: string;
  /** The run that wrote what the target holds, when its kind records it (a manifest), with that run's job definition if recorded. */
  writtenBy?: { runId: string; definition?: JobDefinition | undefined };
}

/** A writer's (or a plan's) guard: the settings in force for its sink, and how to read its target. */
export interface GuardCheck {
  settings: GuardSettings | undefined;
  holding(): Promise<TargetHolding>;
  /**
   * The run that wrote the target, for a kind whose `holding` does not read it (BigQuery: one
   * more read of the run ledger): asked only when a verdict trips, to say what changed since.
   */
  writtenBy?(): Promise<TargetHolding['writtenBy']>;
}

export interface GuardVerdict {
  target: string;
  /** pass: the rules allow the publish; trip: they refuse it; off: no guard on this sink; unknown: the target could not be read. */
  verdict: 'pass' | 'trip' | 'off' | 'unknown';
  rule?: GuardRule;
  /** Rows the target holds (of what a publish replaces), or the recent runs' median for `recent`. */
  held?: number;
  exported: number;
  /** One line: what was compared, and for a trip the setting that changes it. */
  reason: string;
  /** The setting that lets this publish pass, e.g. `guard.maxShrink`. */
  setting?: string;
  /**
   * The job's definition differs from the one of the run that wrote the target (when the target
   * records it): that run, and what changed. A trip's `reason` says it too.
   */
  changedSince?: { runId: string; changes: DefinitionChange[] };
}

/** The flag and variable that let a run that is meant to shrink publish anyway. */
export const ALLOW_SHRINK_FLAG = '--allow-shrink';
export const ALLOW_SHRINK_ENV = 'TILEHOUSE_ALLOW_SHRINK';

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const rows = (count: number) => countNoun(count, 'row');

/**
 * The rules, against a target as its kind read it and this export's row count:
 *
 * - empty: no rows over a target that holds rows (or recent runs that brought rows) is refused
 *   unless `allowEmpty`;
 * - shrink: a replacing publish that would leave fewer than (1 − maxShrink) of the rows held;
 * - recent: fewer than `minOfRecent` × the median of the latest `recentRuns` published runs
 *   (at least 3 known; never for an open window, whose day is not over).
 *
 * A target that does not exist, an empty target, and a history shorter than 3 runs never trip.
 */
export function judgeGuard(
  settings: GuardSettings | undefined,
  holding: TargetHolding,
  exported: number,
  options: { openWindow?: boolean; definition?: JobDefinition | undefined } = {},
): GuardVerdict {
  const verdict = judgeRules(settings, holding, exported, options);
  const before = holding.writtenBy?.definition;
  if (before === undefined || options.definition === undefined || verdict.verdict === 'off') return verdict;
  const changes = definitionChanges(before, options.definition);
  if (changes.length === 0) return verdict;
  const runId = holding.writtenBy!.runId;
  // A refusal is where "why so few rows?" is asked: it says what was edited since the target was written.
  const reason = verdict.verdict === 'trip' ? `${verdict.reason}; ${describeDefinitionChanges(changes, runId)}` : verdict.reason;
  return { ...verdict, reason, changedSince: { runId, changes } };
}

function judgeRules(settings: GuardSettings | undefined, holding: TargetHolding, exported: number, options: { openWindow?: boolean }): GuardVerdict {
  const { target } = holding;
  if (settings === undefined) return { target, verdict: 'off', exported, reason: 'no guard (guard: false)' };
  if (holding.unreadable !== undefined)
    return { target, verdict: 'unknown', exported, reason: `what it holds could not be read (${holding.unreadable}); not judged` };
  const held = holding.effect === 'replace' ? holding.rows : undefined;
  const recent = options.openWindow === true || settings.minOfRecent <= 0 ? [] : (holding.recentRuns ?? []).slice(0, settings.recentRuns);
  const typical = recent.length >= 3 ? median(recent) : undefined;
  const from = `${holding.readFrom}`;
  if (exported === 0 && ((held ?? 0) > 0 || (typical ?? 0) > 0)) {
    const basis = (held ?? 0) > 0 ? `it holds ${rows(held!)} (${from})` : `its last ${recent.length} runs brought a median of ${rows(typical!)}`;
    if (!settings.allowEmpty)
      return {
        target,
        verdict: 'trip',
        rule: 'empty',
        held: (held ?? 0) > 0 ? held! : typical!,
        exported,
        reason: `this export has no rows and ${basis}`,
        setting: 'guard.allowEmpty',
      };
    return { target, verdict: 'pass', rule: 'empty', held: held ?? typical!, exported, reason: `no rows, allowed by guard.allowEmpty (${basis})` };
  }
  if (held !== undefined && held > 0 && exported < held * (1 - settings.maxShrink)) {
    const fewer = Math.round((1 - exported / held) * 100);
    return {
      target,
      verdict: 'trip',
      rule: 'shrink',
      held,
      exported,
      reason: `${rows(exported)} would replace the ${rows(held)} it holds (${from}): ${fewer}% fewer, more than guard.maxShrink ${settings.maxShrink} allows`,
      setting: 'guard.maxShrink',
    };
  }
  if (typical !== undefined && typical > 0 && exported < typical * settings.minOfRecent) {
    return {
      target,
      verdict: 'trip',
      rule: 'recent',
      held: typical,
      exported,
      reason: `${rows(exported)} against a median of ${rows(typical)} over its last ${recent.length} runs: below guard.minOfRecent ${settings.minOfRecent} of it`,
      setting: 'guard.minOfRecent',
    };
  }
  const basis = [
    held === undefined ? (holding.effect === 'replace' ? 'no target yet' : `adds to the target`) : `holds ${rows(held)} (${from})`,
    typical !== undefined
      ? `median of last ${recent.length} runs ${rows(typical)}`
      : options.openWindow === true && holding.recentRuns !== undefined
        ? 'an open window: no history rule'
        : holding.effect === 'add' || (holding.recentRuns?.length ?? 0) > 0
          ? `${recent.length} recent run${recent.length === 1 ? '' : 's'}, fewer than 3: no history rule`
          : undefined,
  ].filter((part) => part !== undefined);
  return { target, verdict: 'pass', exported, ...(held === undefined ? {} : { held }), reason: `${rows(exported)}; ${basis.join('; ')}` };
}
