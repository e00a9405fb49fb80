import { z } from 'zod';

/**
 * `primaryKey` and `latestBy`, as every kind that merges by key takes them (BigQuery, PostgreSQL):
 * `latestBy`'s schema and the rules between them and `writeMode`, written once.
 */
export const latestBySchema = z
  .string()
  .min(1)
  .optional()
  .describe(
    'writeMode merge only: of rows with the same primaryKey in one run, the one with the highest value of this column wins; without it such rows fail the run',
  );

/** A merge needs primaryKey; primaryKey and latestBy only with merge; a key column named twice (`sameName` says when two names are one). */
export function mergeKeyIssues(
  sink: { writeMode: string; primaryKey?: string[] | undefined; latestBy?: string | undefined },
  ctx: z.RefinementCtx,
  sameName: (name: string) => string,
): void {
  if (sink.writeMode === 'merge' && sink.primaryKey === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['writeMode'],
      input: sink.writeMode,
      message: 'writeMode: merge needs primaryKey: the columns whose values identify a row',
    });
  }
  for (const option of ['primaryKey', 'latestBy'] as const) {
    if (sink[option] !== undefined && sink.writeMode !== 'merge') {
      ctx.addIssue({ code: 'custom', path: [option], input: sink[option], message: `only with writeMode: merge (this sink's is ${sink.writeMode})` });
    }
  }
  const keys = new Set<string>();
  for (const [index, name] of (sink.primaryKey ?? []).entries()) {
    if (keys.has(sameName(name))) ctx.addIssue({ code: 'custom', path: ['primaryKey', index], input: name, message: 'listed twice' });
    keys.add(sameName(name));
  }
}
