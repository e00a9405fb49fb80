import type { ExportQuery } from '../../config/job-schema.js';
import { TilehouseError } from '../../errors.js';

/**
 * A window as the instants it spans, [startMs, endMs). The caller places the job's calendar dates
 * in its timezone (transform's `parseTimestamp`), so the endpoint needs no calendar of its own.
 */
export interface WindowSpan {
  startMs: number;
  endMs: number;
}

/** The operands of an `rw` filter: from so many days back, to so many days back. */
export type RelativeWindow = [string, 'days', string, 'days'];

// A unit, not a rule: the endpoint counts `rw` days as 24 hours back from the server's now.
const MS_PER_DAY = 86_400_000;

/**
 * A window item that names no item of the query. The job schema refuses such jobs first; this
 * guards a caller that skipped it, since an unfiltered query would put the tile's whole range
 * into one window's file or partition.
 */
export class WindowItemMissingError extends TilehouseError {
  readonly code = 'window_item_missing';
  constructor(itemIndex: number, itemCount: number) {
    super(
      `query for a window: item index ${itemIndex} names no item of a query with ${itemCount} item${itemCount === 1 ? '' : 's'}; nothing would filter the window`,
    );
  }
}

/**
 * The `rw` operands covering a window, relative to `now` (the only window operator the spec
 * shows is relative to the server's clock, in whole days). The window is widened by one extra
 * day on each side: it absorbs the offset between the job's timezone and the server's, and the
 * seconds between our clock and the server's. Rows outside the window are dropped afterwards
 * when the job names its date-bucket column, so the widening costs a few rows of transfer, never
 * a wrong row.
 */
export function relativeWindowFor(span: WindowSpan, now: Date): RelativeWindow {
  const daysBackToStart = Math.ceil((now.getTime() - span.startMs) / MS_PER_DAY) + 1;
  const daysBackToEnd = Math.max(0, Math.floor((now.getTime() - span.endMs) / MS_PER_DAY) - 1);
  return [String(Math.max(daysBackToStart, 1)), 'days', String(daysBackToEnd), 'days'];
}

// The lookup of the item a window filters (by `ref`, else by `header`) is config's, the same the
// job schema checks with; the seam hands it on to its callers.
export { findItemIndex } from '../../config/window-rules.js';

/**
 * The query that asks the endpoint for one window: the item at `itemIndex` (its date item) gets
 * one `rw` filter for `span` as seen from the source's `now`, in place of any `rw` it had; its
 * other filters and every other item stay as they were.
 */
export function queryForWindow(query: ExportQuery, itemIndex: number, span: WindowSpan, now: Date): ExportQuery {
  if (!Number.isInteger(itemIndex) || itemIndex < 0 || itemIndex >= query.items.length) throw new WindowItemMissingError(itemIndex, query.items.length);
  const rw = relativeWindowFor(span, now);
  return {
    ...query,
    items: query.items.map((item, index) =>
      index !== itemIndex
        ? item
        : { ...item, filters: [...item.filters.filter((filter) => filter.operator !== 'rw'), { operator: 'rw', values: [...rw], beforeAggregate: true }] },
    ),
  };
}
