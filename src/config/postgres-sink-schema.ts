import { z } from 'zod';
import { keyedIncrementalIssues, keyedWriteFields, keyedWriteIssues } from './merge-key-options.js';
import { publishGuardSchema } from './publish-guard-schema.js';
import type { SinkIssue } from './sink-issue.js';

/**
 * PostgreSQL truncates an identifier longer than NAMEDATALEN-1 (63) bytes with only a NOTICE, so
 * two long names could silently name one table: tilehouse refuses them instead, at `validate`.
 */
export const POSTGRES_IDENTIFIER_MAX_BYTES = 63;

/** What is wrong with a PostgreSQL identifier tilehouse will quote, or undefined. */
export function postgresIdentifierProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.includes('\u0000')) return 'must not hold a NUL character';
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > POSTGRES_IDENTIFIER_MAX_BYTES)
    return `is ${bytes} bytes long; PostgreSQL keeps only ${POSTGRES_IDENTIFIER_MAX_BYTES} bytes of a name (NAMEDATALEN) and would cut it silently`;
  return undefined;
}

/** A PostgreSQL identifier as a job or environment file writes it: always quoted by tilehouse, so any case and character but NUL. */
export const postgresIdentifierSchema = z.string().superRefine((name, ctx) => {
  const problem = postgresIdentifierProblem(name);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', input: name, message: problem });
});

/** A PostgreSQL sink in a job file (the sink itself: src/sinks/postgres/). */
export const postgresSinkSchema = z
  .object({
    type: z.literal('postgres'),
    table: postgresIdentifierSchema.optional().describe('Table name, used exactly as written (quoted); default: the job name'),
    postgresSchema: postgresIdentifierSchema.optional().describe('Overrides the environment default schema (sinks.postgres.schema)'),
    writeMode: z
      .enum(['replace', 'append', 'partition', 'merge'])
      .default('replace')
      .describe(
        "replace: the table is the latest run; append: rows are added; partition: the days a run covers (its window, else its rows' days) are replaced; merge: rows update the table by primaryKey",
      ),
    schema: z.enum(['freeze', 'add']).default('freeze').describe('freeze: any change fails; add: new nullable columns are added in the publishing transaction'),
    ...keyedWriteFields('Output column name or header of a DATE or TIMESTAMP column'),
    guard: publishGuardSchema,
  })
  .strict()
  .superRefine((sink, ctx) => keyedWriteIssues(sink, ctx, (name) => name));

export type PostgresSinkConfig = z.infer<typeof postgresSinkSchema>;

/** What an incremental job requires of a PostgreSQL sink: a write mode that takes a day exported twice as once. */
export const postgresIncrementalIssues: (sink: PostgresSinkConfig, index: number) => SinkIssue[] = keyedIncrementalIssues;
