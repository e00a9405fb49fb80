import { z } from 'zod';

/**
 * A sink's publish guard (`guard:` on a sink in a job file, and on `sinks.<kind>` in the
 * environment file for every sink of that kind): the rules that keep a consistent but suddenly
 * small export from replacing what a target holds. The rules themselves are applied by
 * src/sinks/publish-guard.ts; what a target holds is each sink kind's to read.
 */
export const publishGuardSchema = z
  .union([
    z.literal(false),
    z
      .object({
        allowEmpty: z
          .boolean()
          .optional()
          .describe('Default false: an export without rows is not published over a target (or the partitions it replaces) that holds rows'),
        maxShrink: z
          .number()
          .min(0)
          .max(1)
          .optional()
          .describe(
            'Default 0.5: the largest fraction of the rows a target holds that one publish may remove (0.5: more than 50% fewer rows is refused; 1: any shrink passes)',
          ),
        minOfRecent: z
          .number()
          .min(0)
          .max(1)
          .optional()
          .describe(
            'Default 0.1: a run into a target that only grows (append, merge, partition) below this fraction of the median of its recent runs is held (0: off)',
          ),
        recentRuns: z
          .number()
          .int()
          .min(3)
          .max(50)
          .optional()
          .describe('Default 5: how many of the latest published runs of the job into the target the median is taken over; fewer than 3 known runs never trip'),
      })
      .strict(),
  ])
  .optional()
  .describe(
    'The publish guard: false turns it off for this sink; the defaults protect without configuration (see docs/failure-behaviour.md). A run meant to shrink passes with --allow-shrink or TILEHOUSE_ALLOW_SHRINK=1',
  );

export type PublishGuardConfig = z.infer<typeof publishGuardSchema>;

/** The guard's settings in force for one sink, every default filled in. */
export interface GuardSettings {
  allowEmpty: boolean;
  maxShrink: number;
  minOfRecent: number;
  recentRuns: number;
}

/**
 * The defaults, chosen so a guard protects with no configuration and never trips on ordinary
 * variation: incident volume swings by day of week and by season (a quiet Sunday is often a
 * third of a Monday), but a tile that loses more than half of what its target holds in one run
 * is a filter edited, a permission lost or a migrated tenant far more often than real deletions;
 * and a run that brings a tenth of the median of its last five is below any ordinary swing.
 */
export const DEFAULT_GUARD_SETTINGS: GuardSettings = { allowEmpty: false, maxShrink: 0.5, minOfRecent: 0.1, recentRuns: 5 };

/**
 * The settings of a sink: its own `guard` over its kind's environment default over the defaults;
 * undefined when either says `false` (the sink's own object turns it back on).
 */
export function guardSettingsOf(sink: PublishGuardConfig, environment: PublishGuardConfig): GuardSettings | undefined {
  if (sink === false) return undefined;
  if (environment === false && sink === undefined) return undefined;
  const defaults = environment === false || environment === undefined ? {} : environment;
  return { ...DEFAULT_GUARD_SETTINGS, ...withoutUndefined(defaults), ...withoutUndefined(sink ?? {}) };
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
