import { z } from 'zod';
import { QueryError } from './query-error.js';
import { VALUE_TYPES } from './values.js';

/**
 * The Export query as the sandbox service accepts it. The sandbox has its own schema rather than
 * reusing tilehouse's: it stands in for the real service, and must not share the client's mistakes.
 * Unknown members are ignored (the real service's complete query shape is not shown in the spec).
 */
const filterSchema = z.looseObject({
  operator: z.string().min(1),
  values: z.array(z.string(), { error: 'must be an array of strings' }),
  beforeAggregate: z.boolean().optional(),
});

const itemSchema = z.looseObject({
  header: z.string().min(1, 'must be a non-empty string'),
  formula: z.string().min(1, 'must be a non-empty string'),
  dataType: z.enum(VALUE_TYPES, { error: `must be one of ${VALUE_TYPES.join(', ')}` }),
  order: z.enum(['asc', 'desc']).optional(),
  orderSequence: z.number().int().optional(),
  grouped: z.boolean().optional(),
  aggregate: z.string().min(1).optional(),
  function: z.string().min(1).optional(),
  format: z.string().min(1).optional(),
  hidden: z.boolean().optional(),
  ref: z.string().min(1).optional(),
  filters: z.array(filterSchema).default([]),
});

/** "Maximum itemsPerPage: not shown" in the spec; the sandbox takes tilehouse's own upper bound. */
export const MAX_ITEMS_PER_PAGE = 10_000;

const optionsSchema = z.looseObject({
  pageNumber: z.number().int().min(0).default(0),
  itemsPerPage: z.number().int().min(1).max(MAX_ITEMS_PER_PAGE).default(50),
  ignoreRepeatedRows: z.boolean().default(false),
});

export const exportQuerySchema = z.looseObject({
  items: z.array(itemSchema).min(1, 'a query needs at least one item'),
  options: optionsSchema.default({ pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false }),
});

export type SandboxQuery = z.infer<typeof exportQuerySchema>;
export type SandboxQueryItem = SandboxQuery['items'][number];

/** Validates a request body; the error message lists every problem with its path (`items[2].dataType: ...`). */
export function parseExportQuery(body: unknown): SandboxQuery {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new QueryError('the body must be an Export query object {items, options}');
  }
  const result = exportQuerySchema.safeParse(body);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${formatPath(issue.path)}: ${issue.message}`);
  throw new QueryError(`invalid Export query: ${problems.join('; ')}`);
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(query)';
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}
