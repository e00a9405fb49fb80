import type { ExportPage } from './export-response.js';
import { RowOrderCheck, type RowOrder } from './row-order.js';
import { countNoun } from '../../count-noun.js';

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
    | 'progress'
    | 'row-order';
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
 * What told a run's pages apart, as the weakest evidence any page had (see PageConsistency): `echo`, every page
 * after page 0 echoed its own page number once the echo was seen to follow the request;
 * `rows-digest`, some page was told apart only by `hasPrev` and by its rows differing from every
 * earlier page's; `single-page`, there was one page and nothing to tell apart.
 */
export const PAGE_IDENTITIES = ['echo', 'rows-digest', 'single-page'] as const;
export type PageIdentity = (typeof PAGE_IDENTITIES)[number];

/**
 * The checks every export run makes, because the API pages a live table: a page that disagrees
 * with page 0 means the rows we hold no longer form one table, and a page that is not the page
 * asked for (identity checks) would duplicate some rows and lose others without any count
 * noticing.
 *
 * Page identity. The spec says only that `result.query` is "the query that was executed" and
 * that navigation has `hasPrev`; a legal tenant may echo the tile's saved query (its pageNumber
 * never changes), echo nothing, or leave `hasPrev` false. So neither is taken as proof until it
 * has been seen to follow the request; until then a page stands on the evidence that does not
 * depend on a reading of the spec, its rows:
 * - `page-echo`: `query.options.pageNumber` follows the request once it has equalled the page
 *   asked for on two different pages (a static echo can equal at most one). From then on a page
 *   whose echo names another page is refused, and a page whose echo matches is proven (its rows
 *   are not compared). Before that, a mismatching echo proves nothing and refuses nothing.
 * - `hasPrev`: follows the request once it was false on page 0 and true on a later page; from
 *   then on it must be `pageNumber > 0` (a cache that keys on the URL and answers page 0 for
 *   every page fails here, since the page number travels in the POST body). A tenant whose
 *   `hasPrev` is always false never gets there, and loses nothing: such a cache also repeats
 *   page 0's rows, which the next check refuses.
 * - `page-repeated`: a non-empty page not proven by the echo whose rows are identical to an
 *   earlier page's is refused. A genuine table can have two identical pages only when it repeats
 *   rows (e.g. an ungrouped low-cardinality column); we accept refusing that degenerate case,
 *   with a message saying how to make pages distinct, over silently writing one page twice.
 * - `row-order`: when the query orders by a visible number or datetime column, a page's first row
 *   must not sort before the previous page's last row (RowOrderCheck): a source that orders rows
 *   differently per request moves rows across page boundaries without any count noticing.
 */
export class PageConsistency {
  /** What later pages are held to, from page 0 (not the page itself: its rows would stay in memory all run). */
  private first: Pick<ExportPage, 'headers' | 'dataTypes' | 'navigation'> | undefined;
  private rowsSeen = 0;
  /** Digest of each unproven non-empty page's rows → the page it was first seen on. */
  private readonly digests = new Map<string, number>();
  /** The first page whose echoed pageNumber equalled the page asked for. */
  private echoMatchedOn: number | undefined;
  /** The echo has equalled the page asked for on two different pages: it follows the request. */
  private echoFollows = false;
  /** hasPrev was false on page 0 and true on a later page: it follows the request. */
  private hasPrevFollows = false;
  private hasPrevOnFirst: boolean | undefined;
  /** A page after page 0 that no following echo proved. */
  private unprovenLaterPage = false;
  private pagesChecked = 0;
  private readonly rowOrder: RowOrderCheck | undefined;

  /** `rowOrder`: the query's primary sort column, when it can be checked (rowOrderOf). */
  constructor(options: { rowOrder?: RowOrder | undefined } = {}) {
    this.rowOrder = options.rowOrder === undefined ? undefined : new RowOrderCheck(options.rowOrder);
  }

  /** Returns the first failed check for this page, or undefined. Call in page order. */
  check(page: ExportPage): PageCheckFailure | undefined {
    const echoMatches = 'echoedPageNumber' in page && page.echoedPageNumber === page.pageNumber;
    const failure = this.identityFailure(page, echoMatches) ?? this.shapeFailure(page) ?? this.stabilityFailure(page);
    if (failure !== undefined) return failure;
    return this.progressFailure(page, echoMatches);
  }

  /** The answer's own word on which page it is, once the source has been seen to follow the request. */
  private identityFailure(page: ExportPage, echoMatches: boolean): PageCheckFailure | undefined {
    const { pageNumber, navigation } = page;
    if (this.echoFollows && !echoMatches && 'echoedPageNumber' in page) {
      return {
        check: 'page-echo',
        pageNumber,
        drift: true,
        detail: `asked for page ${pageNumber} but the answer's query says pageNumber ${JSON.stringify(page.echoedPageNumber)} (on earlier pages it named the page asked for)`,
      };
    }
    if (this.hasPrevFollows && navigation.hasPrev !== pageNumber > 0) {
      return {
        check: 'hasPrev',
        pageNumber,
        drift: true,
        detail: `navigation.hasPrev is ${navigation.hasPrev} on page ${pageNumber} (on earlier pages it followed the page asked for); the answer is not the page asked for`,
      };
    }
    return undefined;
  }

  /** The page agrees with itself: a dataType per header, rowsCount its rows. */
  private shapeFailure(page: ExportPage): PageCheckFailure | undefined {
    const { pageNumber, headers, dataTypes, navigation, rows } = page;
    if (headers.length !== dataTypes.length) {
      return {
        check: 'headers-dataTypes-aligned',
        pageNumber,
        drift: false,
        detail: `${countNoun(headers.length, 'header')} but ${countNoun(dataTypes.length, 'dataType')}`,
      };
    }
    if (navigation.rowsCount !== rows.length) {
      return {
        check: 'rowsCount',
        pageNumber,
        drift: false,
        detail: `navigation.rowsCount is ${navigation.rowsCount} but the page has ${countNoun(rows.length, 'row')}`,
      };
    }
    return undefined;
  }

  /** The page agrees with page 0: the same headers, dataTypes and totalRows (page 0 itself is recorded). */
  private stabilityFailure(page: ExportPage): PageCheckFailure | undefined {
    const { pageNumber, headers, dataTypes, navigation } = page;
    if (this.first === undefined) {
      this.first = { headers, dataTypes, navigation };
    } else {
      if (!sameList(headers, this.first.headers)) {
        return {
          check: 'headers-stable',
          pageNumber,
          drift: true,
          detail: `headers ${JSON.stringify(headers)} differ from page 0's ${JSON.stringify(this.first.headers)}`,
        };
      }
      if (!sameList(dataTypes, this.first.dataTypes)) {
        return {
          check: 'dataTypes-stable',
          pageNumber,
          drift: true,
          detail: `dataTypes ${JSON.stringify(dataTypes)} differ from page 0's ${JSON.stringify(this.first.dataTypes)}`,
        };
      }
      if (navigation.totalRows !== this.first.navigation.totalRows) {
        return {
          check: 'totalRows-stable',
          pageNumber,
          drift: true,
          detail: `totalRows changed from ${this.first.navigation.totalRows} to ${navigation.totalRows}`,
        };
      }
    }
    return undefined;
  }

  /** What the pages so far prove: no repeated page, rows that add up, progress, the query's order. */
  private progressFailure(page: ExportPage, echoMatches: boolean): PageCheckFailure | undefined {
    const { pageNumber, navigation, rows } = page;
    // The evidence is updated only for a page that passed the checks above: an answer that
    // contradicts page 0 proves nothing about how the source echoes.
    if (echoMatches && !this.echoFollows) {
      if (this.echoMatchedOn === undefined) this.echoMatchedOn = pageNumber;
      else if (this.echoMatchedOn !== pageNumber) this.echoFollows = true;
    }
    if (pageNumber === 0) this.hasPrevOnFirst = navigation.hasPrev;
    else if (this.hasPrevOnFirst === false && navigation.hasPrev) this.hasPrevFollows = true;
    const proven = this.echoFollows && echoMatches;
    if (pageNumber > 0 && !proven) this.unprovenLaterPage = true;
    this.pagesChecked += 1;
    if (!proven && rows.length > 0) {
      const digest = rowsDigest(rows);
      const earlier = this.digests.get(digest);
      if (earlier !== undefined) {
        return {
          check: 'page-repeated',
          pageNumber,
          drift: true,
          detail:
            `its ${countNoun(rows.length, 'row')} ${rows.length === 1 ? 'is' : 'are'} identical to page ${earlier}'s and the answer's query does not follow the page asked for, so nothing else proves which page it is ` +
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
      return {
        check: 'totalRows-sum',
        pageNumber,
        drift: true,
        detail: `${countNoun(this.rowsSeen, 'row')} read so far but totalRows is ${navigation.totalRows}`,
      };
    }
    const misordered = this.rowOrder?.check(page);
    if (misordered) return { check: 'row-order', pageNumber, drift: true, detail: misordered.detail };
    return undefined;
  }

  /** After the last page (hasNext false): the rows read must add up to totalRows. */
  finish(lastPage: number): PageCheckFailure | undefined {
    const total = this.first?.navigation.totalRows ?? 0;
    if (this.rowsSeen !== total) {
      return {
        check: 'totalRows-sum',
        pageNumber: lastPage,
        drift: true,
        detail: `read ${countNoun(this.rowsSeen, 'row')} in total but totalRows is ${total}`,
      };
    }
    return undefined;
  }

  /** Which evidence told the pages checked so far apart (see PAGE_IDENTITIES). */
  identity(): PageIdentity {
    if (this.pagesChecked <= 1) return 'single-page';
    return this.unprovenLaterPage ? 'rows-digest' : 'echo';
  }
}
