import type { ExportPage } from './export-response.js';

/** Checks that a page is the page asked for (as opposed to consistent with the others). */
export const IDENTITY_CHECKS = ['page-echo', 'hasPrev', 'page-repeated'] as const;
export type IdentityCheck = (typeof IDENTITY_CHECKS)[number];

/** A failed consistency check: which one, on which page, and what was seen. */
export interface PageCheckFailure {
  check:
    | IdentityCheck
    | 'headers-stable'
    | 'dataTypes-stable'
    | 'headers-dataTypes-aligned'
    | 'rowsCount'
    | 'totalRows-stable'
    | 'totalRows-sum'
    | 'progress';
  pageNumber: number;
  detail: string;
  /** The data changed while we read it (a re-read from page 0 may succeed), as opposed to a broken page. */
  drift: boolean;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, index) => value === b[index]);
}

export function isIdentityCheck(check: PageCheckFailure['check']): check is IdentityCheck {
  return (IDENTITY_CHECKS as readonly string[]).includes(check);
}

/**
 * A digest of a page's rows, to notice a page served twice: 64 bits from two multiplicative
 * lanes over every value, tagged by type and length-prefixed, so the same values in the same
 * order give the same digest whatever the wire shape was, and different rows collide with a
 * probability of about 2^-64 per pair of pages (the server is the only input: nothing here is
 * adversarial). JSON.stringify of the rows and a SHA-1 of that text, what this replaced, cost
 * ~1 µs per 11-column row (JSON.stringify ~90 % of it); this ~0.4 µs.
 */
function rowsDigest(rows: readonly unknown[][]): string {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  const mix = (value: number): void => {
    a = Math.imul(a ^ value, 0x01000193);
    b = Math.imul((b ^ value) + 0x7f4a7c15, 0x5bd1e995);
    b ^= b >>> 15;
  };
  const mixText = (tag: number, text: string): void => {
    mix(tag);
    mix(text.length);
    for (let index = 0; index < text.length; index++) mix(text.charCodeAt(index));
  };
  for (const row of rows) {
    mix(ROW_TAG);
    mix(row.length);
    for (const value of row) {
      if (typeof value === 'string') mixText(STRING_TAG, value);
      else if (typeof value === 'number') {
        DOUBLE[0] = value;
        mix(NUMBER_TAG);
        mix(DOUBLE_WORDS[0]!);
        mix(DOUBLE_WORDS[1]!);
      } else if (value === null) mix(NULL_TAG);
      else if (typeof value === 'boolean') mix(value ? TRUE_TAG : FALSE_TAG);
      // An ExactNumber (its toJSON is its literal), a {"$date": ms} object, a BigInt.
      else mixText(OTHER_TAG, typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value)));
    }
  }
  return `${(a >>> 0).toString(16).padStart(8, '0')}${(b >>> 0).toString(16).padStart(8, '0')}`;
}

const DOUBLE = new Float64Array(1);
const DOUBLE_WORDS = new Uint32Array(DOUBLE.buffer);
const [ROW_TAG, STRING_TAG, NUMBER_TAG, NULL_TAG, TRUE_TAG, FALSE_TAG, OTHER_TAG] = [0x1e, 1, 2, 3, 4, 5, 6];

/**
 * The checks every export run makes, because the API pages a live table: a page that disagrees
 * with page 0 means the rows we hold no longer form one table, and a page that is not the page
 * asked for (identity checks) would duplicate some rows and lose others without any count
 * noticing.
 *
 * Page identity, strongest proof first:
 * - `page-echo`: the API echoes the executed query; its `options.pageNumber` must be the page
 *   asked for. When it is, the page is proven and the repeat check below is skipped.
 * - `hasPrev`: must be `pageNumber > 0` (a cache that keys on the URL and answers page 0 for
 *   every page fails here, since the page number travels in the POST body).
 * - `page-repeated`: without an echo, a non-empty page whose rows are identical to an earlier
 *   page's is refused. A genuine table can have two identical pages only when it repeats rows
 *   (e.g. an ungrouped low-cardinality column); we accept refusing that degenerate case, with a
 *   message saying how to make pages distinct, over silently writing one page twice.
 */
export class PageConsistency {
  /** What later pages are held to, from page 0 (not the page itself: its rows would stay in memory all run). */
  private first: Pick<ExportPage, 'headers' | 'dataTypes' | 'navigation'> | undefined;
  private rowsSeen = 0;
  /** Digest of each unproven non-empty page's rows → the page it was first seen on. */
  private readonly digests = new Map<string, number>();

  /** Returns the first failed check for this page, or undefined. Call in page order. */
  check(page: ExportPage): PageCheckFailure | undefined {
    const { pageNumber, headers, dataTypes, navigation, rows } = page;
    const echoed = 'echoedPageNumber' in page;
    if (echoed && page.echoedPageNumber !== pageNumber) {
      return { check: 'page-echo', pageNumber, drift: true, detail: `asked for page ${pageNumber} but the answer's query says pageNumber ${JSON.stringify(page.echoedPageNumber)}` };
    }
    if (navigation.hasPrev !== pageNumber > 0) {
      return { check: 'hasPrev', pageNumber, drift: true, detail: `navigation.hasPrev is ${navigation.hasPrev} on page ${pageNumber}; the answer is not the page asked for` };
    }
    if (headers.length !== dataTypes.length) {
      return { check: 'headers-dataTypes-aligned', pageNumber, drift: false, detail: `${headers.length} headers but ${dataTypes.length} dataTypes` };
    }
    if (navigation.rowsCount !== rows.length) {
      return { check: 'rowsCount', pageNumber, drift: false, detail: `navigation.rowsCount is ${navigation.rowsCount} but the page has ${rows.length} rows` };
    }
    if (this.first === undefined) {
      this.first = { headers, dataTypes, navigation };
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
    if (!echoed && rows.length > 0) {
      const digest = rowsDigest(rows);
      const earlier = this.digests.get(digest);
      if (earlier !== undefined) {
        return {
          check: 'page-repeated',
          pageNumber,
          drift: true,
          detail:
            `its ${rows.length} rows are identical to page ${earlier}'s and the answer does not echo its query to prove which page it is ` +
            '(a cache keyed on the URL would do this); if the tile really repeats rows, add a column that tells them apart',
        };
      }
      this.digests.set(digest, pageNumber);
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

}
