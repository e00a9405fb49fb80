import { startBigQueryFaultProxy, type BigQueryFaultProxy, type BigQueryRequest, type FaultDecision } from './bigquery-fault-proxy.js';

/**
 * A loopback proxy in front of the BigQuery emulator (or the copy-job proxy in front of it) that
 * enforces `require_partition_filter` as BigQuery does. The emulator stores a table's
 * requirePartitionFilter but does not enforce it: every query runs, so without this proxy no test
 * could see a statement that BigQuery refuses.
 *
 * A table is policed when the test names it (`tables`), or when its metadata, read from upstream
 * with tables.get at the time of the query, says `requirePartitionFilter: true` (top level or in
 * timePartitioning). Every query and DML statement (jobs.insert of a query job, jobs.query) that
 * reads such a table without a predicate on its partition column that BigQuery could use for
 * partition elimination is refused with BigQuery's answer: HTTP 400, reason `invalidQuery`,
 * "Cannot query over table 'p.d.t' without a filter over column(s) 'c' that can be used for
 * partition elimination". Everything else is forwarded unchanged.
 *
 * What counts as such a predicate, as BigQuery has it: the partition column (bare, or qualified by
 * the table's alias or name) compared with a constant (a literal, a typed literal such as
 * `DATE '2024-03-01'`, a query parameter) by =, <, <=, >, >=, BETWEEN … AND … or IN (…). A
 * comparison with another table's column (`T.day = S.day` in a MERGE's ON) is not one: it prunes
 * nothing before the join. A table is read when the statement names it anywhere but as the target
 * of `INSERT INTO` (MERGE, UPDATE and DELETE read their target). The check is textual, not a SQL
 * parser: it knows the statements tilehouse and its tests send, and a predicate under an OR is
 * taken as a filter (BigQuery may not).
 */
export interface PolicedTable {
  /** `project.dataset.table`. */
  table: string;
  /** The partition column; for an ingestion-time table, `_PARTITIONTIME`. */
  column: string;
}

export interface PartitionFilterRefusal {
  table: string;
  column: string;
  query: string;
  /** jobs.insert or jobs.query. */
  call: 'jobs.insert' | 'jobs.query';
}

export interface PartitionFilterProxy extends BigQueryFaultProxy {
  /** Every query text seen (jobs.insert of a query job, jobs.query), in order, refused or not. */
  queries: string[];
  refusals: PartitionFilterRefusal[];
}

const INGESTION_TIME_COLUMNS = ['_PARTITION_LOAD_TIME', '_PARTITIONDATE', '_PARTITIONTIME'];

/** BigQuery's answer to a query over a require-partition-filter table without such a filter. */
export function partitionFilterRefusal(table: string, columns: readonly string[]): { status: number; body: unknown } {
  const message = `Cannot query over table '${table}' without a filter over column(s) '${columns.join("', '")}' that can be used for partition elimination`;
  return {
    status: 400,
    body: {
      error: {
        code: 400,
        message,
        errors: [{ message, domain: 'global', reason: 'invalidQuery', location: 'q', locationType: 'parameter' }],
        status: 'INVALID_ARGUMENT',
      },
    },
  };
}

export async function startPartitionFilterProxy(
  upstream: string,
  options: { tables?: readonly PolicedTable[]; readMetadata?: boolean } = {},
): Promise<PartitionFilterProxy> {
  const queries: string[] = [];
  const refusals: PartitionFilterRefusal[] = [];
  const told = new Map((options.tables ?? []).map((table) => [table.table.toLowerCase(), table]));
  const readMetadata = options.readMetadata ?? true;

  async function policyOf(table: string): Promise<{ columns: string[] } | undefined> {
    const named = told.get(table.toLowerCase());
    if (named) return { columns: named.column.toUpperCase() === '_PARTITIONTIME' ? INGESTION_TIME_COLUMNS : [named.column] };
    if (!readMetadata) return undefined;
    const [projectId, datasetId, tableId] = table.split('.');
    const answer = await fetch(
      `${upstream}/bigquery/v2/projects/${encodeURIComponent(projectId!)}/datasets/${encodeURIComponent(datasetId!)}/tables/${encodeURIComponent(tableId!)}`,
    );
    if (!answer.ok) return undefined;
    const metadata = (await answer.json()) as { requirePartitionFilter?: boolean; timePartitioning?: { field?: string; requirePartitionFilter?: boolean } };
    const required = metadata.requirePartitionFilter ?? metadata.timePartitioning?.requirePartitionFilter ?? false;
    if (!required || metadata.timePartitioning === undefined) return undefined;
    return { columns: metadata.timePartitioning.field ? [metadata.timePartitioning.field] : INGESTION_TIME_COLUMNS };
  }

  const decide = async (request: BigQueryRequest): Promise<FaultDecision> => {
    const found = queryOf(request);
    if (found === undefined) return { action: 'forward' };
    queries.push(found.query);
    for (const reference of readTables(found.query, found.projectId)) {
      const policy = await policyOf(reference.table);
      if (policy === undefined) continue;
      if (policy.columns.some((column) => hasPartitionPredicate(found.query, column, reference.qualifiers))) continue;
      refusals.push({ table: reference.table, column: policy.columns.join(', '), query: found.query, call: found.call });
      return { action: 'answer', ...partitionFilterRefusal(reference.table, policy.columns) };
    }
    return { action: 'forward' };
  };
  const proxy = await startBigQueryFaultProxy(upstream, decide);
  return Object.assign(proxy, { queries, refusals });
}

function queryOf(request: BigQueryRequest): { query: string; projectId: string; call: 'jobs.insert' | 'jobs.query' } | undefined {
  if (request.method !== 'POST') return undefined;
  const path = /^\/bigquery\/v2\/projects\/([^/]+)\/(jobs|queries)(?:\?|$)/.exec(request.path);
  if (!path) return undefined;
  const projectId = decodeURIComponent(path[1]!);
  const body = request.json as { query?: string; configuration?: { query?: { query?: string } } } | undefined;
  if (path[2] === 'queries' && typeof body?.query === 'string') return { query: body.query, projectId, call: 'jobs.query' };
  const query = body?.configuration?.query?.query;
  return typeof query === 'string' ? { query, projectId, call: 'jobs.insert' } : undefined;
}

/** The tables a statement reads (`p.d.t`), each with the names a column of it may be qualified by. */
export function readTables(query: string, defaultProject: string): Array<{ table: string; qualifiers: string[] }> {
  const read = new Map<string, Set<string>>();
  const reference = /(INSERT\s+(?:INTO\s+)?)?`([^`]+)`(?:\s+(?:AS\s+)?([A-Za-z_]\w*))?/gi;
  for (const match of query.matchAll(reference)) {
    if (match[1] !== undefined) continue;
    const parts = match[2]!.split('.');
    if (parts.length < 2 || parts.length > 3) continue;
    const table = (parts.length === 2 ? [defaultProject, ...parts] : parts).join('.');
    const qualifiers = read.get(table) ?? new Set<string>();
    qualifiers.add(parts.at(-1)!.toLowerCase());
    const alias = match[3];
    if (alias !== undefined && !KEYWORDS.has(alias.toUpperCase())) qualifiers.add(alias.toLowerCase());
    read.set(table, qualifiers);
  }
  return [...read].map(([table, qualifiers]) => ({ table, qualifiers: [...qualifiers] }));
}

// Words that may follow a table name but are not its alias.
const KEYWORDS = new Set([
  'WHERE',
  'ON',
  'USING',
  'SET',
  'WHEN',
  'GROUP',
  'ORDER',
  'LIMIT',
  'JOIN',
  'INNER',
  'LEFT',
  'RIGHT',
  'FULL',
  'CROSS',
  'UNION',
  'HAVING',
]);

const CONSTANT = String.raw`(?:(?:DATE|TIMESTAMP|DATETIME)\s*(?:\(\s*)?'[^']*'(?:\s*\))?|'[^']*'|@\w+|-?\d+(?:\.\d+)?)`;

/** Whether the statement has a predicate on `column` (bare or qualified) against constants. */
export function hasPartitionPredicate(query: string, column: string, qualifiers: readonly string[]): boolean {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const name = `\`?${escape(column)}\`?`;
  const qualified = `(?:(?:${qualifiers.map(escape).join('|')})\\.)?`;
  // Not preceded by another qualifier (S.day) or part of a longer name.
  const subject = `(?<![\\w.\`])${qualified}${name}(?![\\w\`])`;
  const forms = [
    `${subject}\\s*(?:=|<=|>=|<|>)\\s*${CONSTANT}`,
    `${CONSTANT}\\s*(?:=|<=|>=|<|>)\\s*${subject}`,
    `${subject}\\s+BETWEEN\\s+${CONSTANT}\\s+AND\\s+${CONSTANT}`,
    `${subject}\\s+IN\\s*\\(\\s*${CONSTANT}(?:\\s*,\\s*${CONSTANT})*\\s*\\)`,
  ];
  return forms.some((form) => new RegExp(form, 'i').test(query));
}
