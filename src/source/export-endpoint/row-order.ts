import type { ExportPage } from './export-response.js';

/** The query items' fields that say how rows are ordered (the job schema's query item). */
interface OrderableItem {
  header: string;
  dataType: string;
  order?: 'asc' | 'desc' | undefined;
  orderSequence?: number | undefined;
  hidden?: boolean | undefined;
}

export type OrderedDataType = 'number' | 'datetime';

/**
 * A cell as a number that sorts the way the source sorts the column, or undefined when it says
 * nothing certain. Value parsing is the transform's: the pipeline passes transform's `sortKeyOf`,
 * so the source does not import a later stage.
 */
export type SortKeyReader = (value: unknown, dataType: OrderedDataType) => number | undefined;

/** The column the source sorts rows by first, when that order can be checked from the rows alone. */
export interface RowOrder {
  header: string;
  direction: 'asc' | 'desc';
  dataType: OrderedDataType;
  sortKey: SortKeyReader;
}

const CHECKABLE_TYPES: ReadonlySet<string> = new Set(['number', 'datetime']);

/**
 * The query's primary sort column, if a page boundary can be checked against it without ever
 * refusing a right answer; undefined otherwise. Only an unambiguous primary counts: the one item
 * with `order`, or, among items that all carry an `orderSequence`, the one with the lowest (the
 * spec does not say where an ordered item without a sequence sorts, nor which of two equal
 * sequences wins). It must be visible (a hidden item has no column to read) and a `number` or
 * `datetime`: text sorts by the server's collation ('a' < 'B' in one, 'B' < 'a' in another).
 */
export function rowOrderOf(query: { items: readonly OrderableItem[] }, sortKey: SortKeyReader): RowOrder | undefined {
  const ordered = query.items.filter((item) => item.order !== undefined);
  if (ordered.length === 0) return undefined;
  let primary: OrderableItem;
  if (ordered.length === 1) primary = ordered[0]!;
  else {
    if (!ordered.every((item) => item.orderSequence !== undefined)) return undefined;
    const lowest = Math.min(...ordered.map((item) => item.orderSequence!));
    const first = ordered.filter((item) => item.orderSequence === lowest);
    if (first.length !== 1) return undefined;
    primary = first[0]!;
  }
  const dataType = primary.dataType.trim().toLowerCase();
  if (primary.hidden === true || !CHECKABLE_TYPES.has(dataType)) return undefined;
  return { header: primary.header, direction: primary.order!, dataType: dataType as OrderedDataType, sortKey };
}

/** A page boundary whose rows run against the query's order: the detail of a failed check. */
export interface RowOrderViolation {
  detail: string;
}

/**
 * Holds each page's first row against the previous page's last row in the query's primary order.
 * The API is paged by offset, so page N continues page N−1 only if the source sorts every request
 * the same way; one that does not (an unordered query over a table without a stable physical
 * order) can put a row on two pages and another on none while every count still adds up. Within
 * a page the order is not checked: a boundary is where rows are lost. Ties are accepted (the
 * order among equal keys is the source's), so is everything the sort key reader cannot read.
 */
export class RowOrderCheck {
  private previousLast: { pageNumber: number; key: number; value: unknown } | undefined;

  constructor(private readonly order: RowOrder) {}

  /** Call in page order, only for pages that passed the other checks. */
  check(page: ExportPage): RowOrderViolation | undefined {
    const column = page.headers.indexOf(this.order.header);
    if (column < 0 || page.dataTypes[column]?.trim().toLowerCase() !== this.order.dataType || page.rows.length === 0) return undefined;
    const firstValue = page.rows[0]![column];
    const previous = this.previousLast;
    const lastValue = page.rows.at(-1)![column];
    const lastKey = this.order.sortKey(lastValue, this.order.dataType);
    // A last row without a readable key leaves no boundary to check on the next page.
    this.previousLast = lastKey === undefined ? undefined : { pageNumber: page.pageNumber, key: lastKey, value: lastValue };
    const firstKey = this.order.sortKey(firstValue, this.order.dataType);
    if (previous === undefined || firstKey === undefined || previous.pageNumber !== page.pageNumber - 1) return undefined;
    const outOfOrder = this.order.direction === 'asc' ? firstKey < previous.key : firstKey > previous.key;
    if (!outOfOrder) return undefined;
    return {
      detail:
        `row 1 has ${JSON.stringify(this.order.header)} ${JSON.stringify(firstValue)}, which sorts before page ${previous.pageNumber}'s last row's ${JSON.stringify(previous.value)} ` +
        `although the query orders by that column ${this.order.direction}: the source returned rows in a different order on different requests, ` +
        'so pages may overlap or skip rows; give the query an order on a unique number or datetime column',
    };
  }
}
