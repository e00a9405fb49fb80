import type { ExportPage } from './export-response.js';

/** A failed consistency check: which one, on which page, and what was seen. */
export interface PageCheckFailure {
  check: 'headers-stable' | 'dataTypes-stable' | 'headers-dataTypes-aligned' | 'rowsCount' | 'totalRows-stable' | 'totalRows-sum' | 'progress';
  pageNumber: number;
  detail: string;
  /** The data changed while we read it (a re-read from page 0 may succeed), as opposed to a broken page. */
  drift: boolean;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

/**
 * The checks every export run makes, because the API pages a live table: a page that disagrees
 * with page 0 means the rows we hold no longer form one table.
 */
export class PageConsistency {
  private first: ExportPage | undefined;
  private rowsSeen = 0;

  /** Returns the first failed check for this page, or undefined. Call in page order. */
  check(page: ExportPage): PageCheckFailure | undefined {
    const { pageNumber, headers, dataTypes, navigation, rows } = page;
    if (headers.length !== dataTypes.length) {
      return { check: 'headers-dataTypes-aligned', pageNumber, drift: false, detail: `${headers.length} headers but ${dataTypes.length} dataTypes` };
    }
    if (navigation.rowsCount !== rows.length) {
      return { check: 'rowsCount', pageNumber, drift: false, detail: `navigation.rowsCount is ${navigation.rowsCount} but the page has ${rows.length} rows` };
    }
    if (this.first === undefined) {
      this.first = page;
    } else {
      if (!sameList(headers, this.first.headers)) {
        return { check: 'headers-stable', pageNumber, drift: true, detail: `headers ${JSON.stringify(headers)} differ from page 0's ${JSON.stringify(this.first.headers)}` };
      }
      if (!sameList(dataTypes, this.first.dataTypes)) {
        return { check: 'dataTypes-stable', pageNumber, drift: true, detail: `dataTypes ${JSON.stringify(dataTypes)} differ from page 0's ${JSON.stringify(this.first.dataTypes)}` };
      }
      if (navigation.totalRows !== this.first.navigation.totalRows) {
        return { check: 'totalRows-stable', pageNumber, drift: true, detail: `totalRows changed from ${this.first.navigation.totalRows} to ${navigation.totalRows}` };
      }
    }
    this.rowsSeen += rows.length;
    if (navigation.hasNext && rows.length === 0) {
      return { check: 'progress', pageNumber, drift: false, detail: 'hasNext is true but the page is empty; paging would never end' };
    }
    if (this.rowsSeen > navigation.totalRows) {
      return { check: 'totalRows-sum', pageNumber, drift: true, detail: `${this.rowsSeen} rows read so far but totalRows is ${navigation.totalRows}` };
    }
    return undefined;
  }

  /** After the last page (hasNext false): the rows read must add up to totalRows. */
  finish(lastPage: number): PageCheckFailure | undefined {
    const total = this.first?.navigation.totalRows ?? 0;
    if (this.rowsSeen !== total) {
      return { check: 'totalRows-sum', pageNumber: lastPage, drift: true, detail: `read ${this.rowsSeen} rows in total but totalRows is ${total}` };
    }
    return undefined;
  }

  get rows(): number {
    return this.rowsSeen;
  }
}
