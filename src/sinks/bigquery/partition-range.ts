/**
 * The span of partition-column values a run's rows have, as the first day and the day after the
 * last (UTC days for a TIMESTAMP column, as BigQuery partitions it), as constants (see
 * rangePredicate): a filter BigQuery takes on a table with `require_partition_filter` (it refuses
 * a query of such a table without a filter on the partition column it can use for partition
 * elimination, DML included) that reads only the run's partitions. Carried by the count of the
 * run's own rows, and by a MERGE whose key includes the partition column (mergeTargetFilter: any
 * other MERGE must match over every partition, everyPartitionPredicate).
 */
export interface PartitionRange {
  column: string;
  columnType: 'DATE' | 'TIMESTAMP';
  /** YYYY-MM-DD: the first day of the range. */
  from: string;
  /** YYYY-MM-DD: the first day after it. */
  until: string;
}

/**
 * The range of partition ids (`YYYYMMDD` or `YYYYMM`, as collected while rows are written):
 * from the first one's first day to the day after the last one's last day. Undefined for none.
 */
export function rangeOfPartitionIds(ids: Iterable<string>, partition: { field: string; columnType: 'DATE' | 'TIMESTAMP' }): PartitionRange | undefined {
  const sorted = [...ids].sort();
  const first = sorted[0];
  const last = sorted.at(-1);
  if (first === undefined || last === undefined) return undefined;
  const dayOf = (id: string) => `${id.slice(0, 4)}-${id.slice(4, 6)}-${id.length === 8 ? id.slice(6, 8) : '01'}`;
  const until = last.length === 8 ? nextDay(dayOf(last)) : nextMonth(dayOf(last));
  return { column: partition.field, columnType: partition.columnType, from: dayOf(first), until };
}

/** The range of days from `lowest` to `highest` (YYYY-MM-DD, both included). */
export function rangeOfDays(column: string, columnType: 'DATE' | 'TIMESTAMP', lowest: string, highest: string): PartitionRange {
  return { column, columnType, from: lowest, until: nextDay(highest) };
}

/**
 * `T.col >= DATE 'from' AND T.col < DATE 'until'` (TIMESTAMP literals at UTC midnight for a
 * TIMESTAMP column): constants, which BigQuery takes for partition elimination (a comparison
 * with a column of another table, like the MERGE's `T.day = S.day`, it does not).
 */
export function rangePredicate(range: PartitionRange, qualifier?: string): string {
  const column = `${qualifier === undefined ? '' : `${qualifier}.`}\`${range.column.replaceAll('`', '')}\``;
  const literal = (day: string) => (range.columnType === 'DATE' ? `DATE '${day}'` : `TIMESTAMP '${day} 00:00:00+00'`);
  return `${column} >= ${literal(range.from)} AND ${column} < ${literal(range.until)}`;
}

/**
 * A filter on the partition column that BigQuery takes for partition elimination (the column
 * alone, compared with constants) and that eliminates no partition: `(T.col IS NULL OR T.col >=
 * DATE '0001-01-01')`, the least DATE or TIMESTAMP there is, so the `__NULL__` and
 * `__UNPARTITIONED__` partitions are covered too. What a MERGE over the whole table carries on a
 * table that requires a partition filter (see mergeTargetFilter). `_PARTITIONTIME` for an
 * ingestion-time partitioned table (a TIMESTAMP; its streaming buffer is NULL).
 */
export function everyPartitionPredicate(column: string, columnType: 'DATE' | 'TIMESTAMP' | 'DATETIME', qualifier?: string): string {
  const name = `${qualifier === undefined ? '' : `${qualifier}.`}${column === '_PARTITIONTIME' ? column : `\`${column.replaceAll('`', '')}\``}`;
  return `(${name} IS NULL OR ${name} >= ${LEAST[columnType]})`;
}

const LEAST = { DATE: "DATE '0001-01-01'", TIMESTAMP: "TIMESTAMP '0001-01-01 00:00:00+00'", DATETIME: "DATETIME '0001-01-01 00:00:00'" } as const;

export function nextDay(day: string): string {
  const date = new Date(`${day}T00:00:00.000Z`);
  date.setUTCDate(date.getUTCDate() + 1);
  return date.toISOString().slice(0, 10);
}

function nextMonth(day: string): string {
  const date = new Date(`${day.slice(0, 7)}-01T00:00:00.000Z`);
  date.setUTCMonth(date.getUTCMonth() + 1);
  return date.toISOString().slice(0, 10);
}

const MS_PER_DAY = 86_400_000;

/**
 * Whether BigQuery has already dropped (or drops at once) a partition: its expiration time is the
 * partition's upper boundary in UTC (the day after a day partition, the first of the next month)
 * plus the table's expiration; at `now` or before, rows written there are deleted. (Taken from
 * the later boundary on purpose: a partition this calls expired is expired under either reading
 * of "partition time"; one at the edge may expire within its day.)
 */
export function partitionExpired(id: string, expirationMs: number, now: number): boolean {
  const first = `${id.slice(0, 4)}-${id.slice(4, 6)}-${id.length === 8 ? id.slice(6, 8) : '01'}`;
  const end = id.length === 8 ? nextDay(first) : nextMonth(first);
  return Date.parse(`${end}T00:00:00.000Z`) + expirationMs <= now;
}

/** The first day (YYYY-MM-DD, UTC) whose day partition is not yet expired at `now`. */
export function firstKeptDay(expirationMs: number, now: number): string {
  // Day D is expired when (D + 1 day) + expiration <= now, i.e. D < floor((now - expiration) / day).
  return new Date(Math.floor((now - expirationMs) / MS_PER_DAY) * MS_PER_DAY).toISOString().slice(0, 10);
}

/**
 * For a table partitioned by a column the job does not name in `partitionBy` (a table made by
 * hand): the staging table's range of that column's UTC days, and, with an expiration on a day-
 * partitioned table, how many of its rows fall in partitions already expired.
 */
export function stagingRangeQuery(staging: string, column: string, columnType: 'DATE' | 'TIMESTAMP', keptFrom: string | undefined): string {
  const name = `\`${column.replaceAll('`', '')}\``;
  const day = columnType === 'DATE' ? name : `DATE(${name})`;
  const expired = keptFrom === undefined ? '' : `, COUNTIF(${day} < DATE '${keptFrom}') AS expired`;
  return `SELECT CAST(MIN(${day}) AS STRING) AS lo, CAST(MAX(${day}) AS STRING) AS hi${expired} FROM \`${staging.replaceAll('`', '')}\``;
}
