/**
 * What a windowed job (backfill, incremental) requires of its query, stated once: the job schema
 * checks an incremental job with it at load time, the windows family (`pipeline/windows/`) checks
 * a backfill with it before the first request, and the source's export seam finds the window's
 * item with the same lookup. It lies in config, below source and pipeline, so all three can ask.
 * Of a file sink, every windowed job requires one file per window (`writesOneFilePerWindow`);
 * what else it requires of a sink is its kind's (`<kind>-sink-schema.ts`: a BigQuery write mode).
 */

interface QueryItemLike {
  header: string;
  dataType: string;
  hidden?: boolean | undefined;
  ref?: string | undefined;
}

/** The query item a window filters: by `ref`, else by `header`; -1 when none. */
export function findItemIndex(query: { items: ReadonlyArray<Pick<QueryItemLike, 'header' | 'ref'>> }, name: string): number {
  const byRef = query.items.findIndex((item) => item.ref === name);
  return byRef >= 0 ? byRef : query.items.findIndex((item) => item.header === name);
}

/** Which windowed job asks: the words of the dataType message differ, the rule does not. */
export type WindowedJobKind = 'backfill' | 'incremental';

export interface WindowItemProblem {
  /** The setting at fault, under the section that named it (`backfill` or `incremental`). */
  key: 'item' | 'bucketColumn';
  value: string;
  message: string;
}

const DATETIME_MESSAGE: Record<WindowedJobKind, (dataType: string) => string> = {
  backfill: (dataType) => `the item's dataType is ${dataType}; rw windows apply to datetime items`,
  incremental: (dataType) => `the item's dataType is ${dataType}; incremental day windows filter a datetime item with rw`,
};

/**
 * The window item must be a datetime item of the query (found by ref, else header), and a bucket
 * column, if named, the header of a visible item (the rows are cut to the window by it).
 */
export function windowItemProblems(
  items: readonly QueryItemLike[],
  item: string,
  bucketColumn: string | undefined,
  kind: WindowedJobKind,
): WindowItemProblem[] {
  const problems: WindowItemProblem[] = [];
  const index = findItemIndex({ items }, item);
  if (index < 0) problems.push({ key: 'item', value: item, message: 'no query item has this ref or header' });
  else if (items[index]!.dataType !== 'datetime') problems.push({ key: 'item', value: item, message: DATETIME_MESSAGE[kind](items[index]!.dataType) });
  if (bucketColumn !== undefined && !items.some((candidate) => candidate.header === bucketColumn && candidate.hidden !== true)) {
    problems.push({ key: 'bucketColumn', value: bucketColumn, message: 'no visible query item has this header' });
  }
  return problems;
}

/**
 * Whether a file sink's path template writes one file per window: it names `{date}`. (A sink that
 * names no path gets its kind's windowed default, which does.)
 */
export function writesOneFilePerWindow(pathTemplate: string): boolean {
  return pathTemplate.includes('{date}');
}
