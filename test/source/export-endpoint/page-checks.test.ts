import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../../src/value-types/exact-number.js';
import type { ExportPage } from '../../../src/source/export-endpoint/export-response.js';
import { PageConsistency } from '../../../src/source/export-endpoint/page-checks.js';
import { rowOrderOf } from '../../../src/source/export-endpoint/row-order.js';
import { sortKeyOf } from '../../../src/transform/values/sort-key.js';

function page(pageNumber: number, rows: number, totalRows: number, overrides: Partial<ExportPage> = {}): ExportPage {
  return {
    pageNumber,
    headers: ['Type', 'Count'],
    dataTypes: ['text', 'number'],
    // Distinct per page: identical pages are refused as a repeat (see the page identity checks).
    rows: Array.from({ length: rows }, (_, i) => [`p${pageNumber}-t${i}`, i]),
    navigation: { hasPrev: pageNumber > 0, hasNext: true, rowsCount: rows, totalRows },
    ...overrides,
  };
}

describe('PageConsistency', () => {
  it('accepts pages that add up to totalRows', () => {
    const checks = new PageConsistency();
    expect(checks.check(page(0, 2, 3))).toBeUndefined();
    expect(checks.check(page(1, 1, 3))).toBeUndefined();
    expect(checks.finish(1)).toBeUndefined();
  });

  it('fails when rowsCount disagrees with the rows on the page', () => {
    const bad = page(0, 2, 2);
    bad.navigation.rowsCount = 3;
    expect(new PageConsistency().check(bad)).toMatchObject({ check: 'rowsCount', pageNumber: 0, drift: false });
  });

  it('fails as drift when headers change after page 0', () => {
    const checks = new PageConsistency();
    checks.check(page(0, 1, 2));
    expect(checks.check(page(1, 1, 2, { headers: ['Type', 'Total'] }))).toMatchObject({ check: 'headers-stable', pageNumber: 1, drift: true });
  });

  it('fails as drift when dataTypes change after page 0', () => {
    const checks = new PageConsistency();
    checks.check(page(0, 1, 2));
    expect(checks.check(page(1, 1, 2, { dataTypes: ['text', 'text'] }))).toMatchObject({ check: 'dataTypes-stable', drift: true });
  });

  it('fails as drift when totalRows changes between pages', () => {
    const checks = new PageConsistency();
    checks.check(page(0, 1, 2));
    expect(checks.check(page(1, 1, 3))).toMatchObject({ check: 'totalRows-stable', pageNumber: 1, detail: 'totalRows changed from 2 to 3' });
  });

  it('fails when the sum of rows does not reach totalRows at the end', () => {
    const checks = new PageConsistency();
    checks.check(page(0, 2, 5));
    expect(checks.finish(0)).toMatchObject({ check: 'totalRows-sum', detail: 'read 2 rows in total but totalRows is 5' });
  });

  it('fails as soon as more rows arrive than totalRows announced', () => {
    const checks = new PageConsistency();
    checks.check(page(0, 2, 3));
    expect(checks.check(page(1, 2, 3))).toMatchObject({ check: 'totalRows-sum', pageNumber: 1 });
  });

  it('refuses an empty page that claims there is more, which would page forever', () => {
    expect(new PageConsistency().check(page(0, 0, 0))).toMatchObject({ check: 'progress' });
  });

  it('fails when headers and dataTypes differ in length', () => {
    expect(new PageConsistency().check(page(0, 1, 1, { dataTypes: ['text'] }))).toMatchObject({ check: 'headers-dataTypes-aligned' });
  });

  describe('page identity', () => {
    it('fails as drift when an echo that followed the request names another page', () => {
      const checks = new PageConsistency();
      expect(checks.check({ ...page(0, 2, 8), echoedPageNumber: 0 })).toBeUndefined();
      expect(checks.check({ ...page(1, 2, 8), echoedPageNumber: 1 })).toBeUndefined();
      expect(checks.check({ ...page(2, 2, 8), echoedPageNumber: '2' })).toMatchObject({
        check: 'page-echo',
        pageNumber: 2,
        drift: true,
        detail: expect.stringContaining('pageNumber "2"'),
      });
    });

    it('refuses nothing for an echo that never followed the request: the saved query, or page 0 only', () => {
      for (const echoes of [
        [0, 0, 0, 0],
        [7, 7, 7, 7],
        [0, undefined, undefined, undefined],
        [undefined, 1, undefined, 3],
      ]) {
        const checks = new PageConsistency();
        for (const [number, echo] of echoes.entries()) {
          const answer = page(number, 2, 8);
          if (number === 3) answer.navigation.hasNext = false;
          expect(checks.check(echo === undefined ? answer : { ...answer, echoedPageNumber: echo }), `echoes ${echoes}`).toBeUndefined();
        }
        expect(checks.finish(3)).toBeUndefined();
        expect(checks.identity()).toBe('rows-digest');
      }
    });

    it('does not take a static echo that equals one page number as following the request', () => {
      // The saved query says pageNumber 2: it matches page 2 by chance, then page 3 must still pass.
      const checks = new PageConsistency();
      for (const number of [0, 1, 2, 3]) expect(checks.check({ ...page(number, 2, 8), echoedPageNumber: 2 })).toBeUndefined();
      expect(checks.identity()).toBe('rows-digest');
    });

    it('still refuses page 0 served again under a static echo, by its rows', () => {
      const checks = new PageConsistency();
      const first = { ...page(0, 2, 6), echoedPageNumber: 0 };
      expect(checks.check(first)).toBeUndefined();
      const again = { ...first, pageNumber: 1 };
      expect(checks.check(again)).toMatchObject({ check: 'page-repeated', pageNumber: 1, drift: true });
    });

    it('catches page 0 served again before the echo could follow, by its rows', () => {
      // A faithful echo, but the first later page comes from a cache keyed on the URL.
      const checks = new PageConsistency();
      const first = { ...page(0, 2, 6), echoedPageNumber: 0 };
      expect(checks.check(first)).toBeUndefined();
      expect(checks.check({ ...first, pageNumber: 1 })).toMatchObject({ check: 'page-repeated', pageNumber: 1 });
    });

    it('fails when hasPrev, once it followed the request, contradicts the page number', () => {
      const checks = new PageConsistency();
      expect(checks.check(page(0, 2, 8))).toBeUndefined();
      expect(checks.check(page(1, 2, 8))).toBeUndefined();
      const third = page(2, 2, 8);
      third.navigation.hasPrev = false;
      expect(checks.check(third)).toMatchObject({ check: 'hasPrev', pageNumber: 2, drift: true });
    });

    it('accepts a source whose hasPrev is always false, and one that says true on page 0', () => {
      for (const hasPrev of [false, true]) {
        const checks = new PageConsistency();
        for (const number of [0, 1, 2]) {
          const answer = page(number, 2, 6);
          answer.navigation.hasPrev = hasPrev;
          if (number === 2) answer.navigation.hasNext = false;
          expect(checks.check(answer)).toBeUndefined();
        }
        expect(checks.finish(2)).toBeUndefined();
      }
    });

    it('fails when a page repeats the rows of any earlier page, naming it', () => {
      const checks = new PageConsistency();
      expect(checks.check(page(0, 2, 6))).toBeUndefined();
      expect(checks.check(page(1, 2, 6))).toBeUndefined();
      expect(checks.check({ ...page(2, 2, 6), rows: page(0, 2, 6).rows })).toMatchObject({
        check: 'page-repeated',
        pageNumber: 2,
        drift: true,
        detail: expect.stringContaining("identical to page 0's"),
      });
    });

    it('accepts identical pages when each echoes its own page number (a table that repeats rows)', () => {
      const checks = new PageConsistency();
      const same = [
        ['Outage', 1],
        ['Outage', 1],
      ];
      expect(checks.check({ ...page(0, 2, 4), rows: same, echoedPageNumber: 0 })).toBeUndefined();
      const last = { ...page(1, 2, 4), rows: same, echoedPageNumber: 1 };
      last.navigation.hasNext = false;
      expect(checks.check(last)).toBeUndefined();
      expect(checks.finish(1)).toBeUndefined();
      expect(checks.identity()).toBe('echo');
    });

    it('says which evidence told the pages apart', () => {
      const single = new PageConsistency();
      const only = page(0, 2, 2);
      only.navigation.hasNext = false;
      single.check(only);
      expect(single.identity()).toBe('single-page');
      // The echo followed from page 1 on; page 3 came without it and stood on its rows.
      const mixed = new PageConsistency();
      for (const number of [0, 1, 2]) mixed.check({ ...page(number, 2, 8), echoedPageNumber: number });
      expect(mixed.identity()).toBe('echo');
      mixed.check(page(3, 2, 8));
      expect(mixed.identity()).toBe('rows-digest');
    });

    it('does not compare empty pages', () => {
      const checks = new PageConsistency();
      const empty = page(0, 0, 0);
      empty.navigation.hasNext = false;
      expect(checks.check(empty)).toBeUndefined();
    });

    it('digests values JSON cannot write (BigInt from a lossless parser) without failing', () => {
      const checks = new PageConsistency();
      expect(checks.check({ ...page(0, 1, 2), rows: [['a', 9007199254740993n]] })).toBeUndefined();
      expect(checks.check({ ...page(1, 1, 2), rows: [['a', 9007199254740993n]] })).toMatchObject({ check: 'page-repeated' });
    });

    it('refuses a repeat and only a repeat: pages whose values differ in any way pass (property)', () => {
      const value = fc.oneof(
        fc.string({ maxLength: 6 }),
        fc.double(),
        fc.constantFrom(null, true, false, 0, -0, '0', '', 'null', 'true', new ExactNumber('12345678901234567890'), { $date: 1 }),
      );
      const rows = fc.array(fc.array(value, { minLength: 2, maxLength: 2 }), { minLength: 1, maxLength: 4 });
      fc.assert(
        fc.property(rows, rows, (first, second) => {
          const checks = new PageConsistency();
          const total = first.length + second.length + first.length;
          expect(checks.check({ ...page(0, first.length, total), rows: first })).toBeUndefined();
          const same = Object.is(first.length, second.length) && first.every((row, r) => row.every((cell, c) => sameCell(cell, second[r]![c])));
          const verdict = checks.check({ ...page(1, second.length, total), rows: second });
          if (same) expect(verdict).toMatchObject({ check: 'page-repeated' });
          else expect(verdict).toBeUndefined();
          expect(checks.check({ ...page(2, first.length, total), rows: first.map((row) => [...row]) })).toMatchObject({
            check: 'page-repeated',
            detail: expect.stringContaining("identical to page 0's"),
          });
        }),
        { numRuns: 300 },
      );
    });
  });
});

/** Equal as the API sent it: same type and value (-0 and 0 differ as doubles; NaN is NaN). */
function sameCell(a: unknown, b: unknown): boolean {
  if (typeof a === 'object' && a !== null)
    return typeof b === 'object' && b !== null && JSON.stringify(a) === JSON.stringify(b) && a.constructor === b.constructor;
  return Object.is(a, b);
}

describe('PageConsistency row order (the query orders by a visible number or datetime column)', () => {
  const asc = { header: 'Count', direction: 'asc', dataType: 'number', sortKey: sortKeyOf } as const;
  /** A page of `counts` in the Count column; Type tells rows apart. */
  const countsPage = (pageNumber: number, counts: unknown[], totalRows: number, dataTypes = ['text', 'number']): ExportPage => ({
    ...page(pageNumber, counts.length, totalRows, { dataTypes }),
    rows: counts.map((count, i) => [`p${pageNumber}-t${i}`, count]),
  });

  it("refuses as drift a page whose first row sorts before the previous page's last, naming page, row, column and values", () => {
    const checks = new PageConsistency({ rowOrder: asc });
    expect(checks.check(countsPage(0, [1, 2, 7], 6))).toBeUndefined();
    expect(checks.check(countsPage(1, [3, 8, 9], 6))).toMatchObject({
      check: 'row-order',
      pageNumber: 1,
      drift: true,
      detail: expect.stringMatching(
        /^row 1 has "Count" 3, which sorts before page 0's last row's 7 although the query orders by that column asc: the source returned rows in a different order on different requests/,
      ),
    });
  });

  it('accepts ties across a boundary, a descending order, and keys of every wire shape the transform reads', () => {
    const tie = new PageConsistency({ rowOrder: asc });
    expect(tie.check(countsPage(0, [1, 5], 4))).toBeUndefined();
    expect(tie.check(countsPage(1, [5, 6], 4))).toBeUndefined();
    const desc = new PageConsistency({ rowOrder: { ...asc, direction: 'desc' } });
    expect(desc.check(countsPage(0, [9, '7.5%'], 4))).toBeUndefined();
    expect(desc.check(countsPage(1, [new ExactNumber('7.5'), 1], 4))).toBeUndefined();
    const refused = new PageConsistency({ rowOrder: { ...asc, direction: 'desc' } });
    refused.check(countsPage(0, [9, 7], 4));
    expect(refused.check(countsPage(1, ['8', 1], 4))).toMatchObject({ check: 'row-order', detail: expect.stringContaining('"Count" "8"') });
  });

  it("does not judge a boundary at a null or at a value that does not parse (nulls first or last is unstated; type errors are the transform's)", () => {
    for (const [last, first] of [
      [5, null],
      [null, 1],
      [5, 'n/a'],
      ['1,234', 2],
    ] as const) {
      const checks = new PageConsistency({ rowOrder: asc });
      expect(checks.check(countsPage(0, [0, last], 4))).toBeUndefined();
      expect(checks.check(countsPage(1, [first, 9], 4))).toBeUndefined();
    }
  });

  it('compares datetimes as instants (epoch ms, {"$date"}, ISO with a zone) and skips wall-clock times without one', () => {
    const byTime = { header: 'Count', direction: 'asc', dataType: 'datetime', sortKey: sortKeyOf } as const;
    const types = ['text', 'datetime'];
    const zoned = new PageConsistency({ rowOrder: byTime });
    expect(zoned.check(countsPage(0, [0, '2026-03-01T10:00:00+02:00'], 4, types))).toBeUndefined();
    // 09:00Z is 11:00+02:00: later, although its text sorts first.
    expect(zoned.check(countsPage(1, ['2026-03-01T09:00:00Z', { $date: Date.UTC(2027, 0, 1) }], 4, types))).toBeUndefined();
    const refused = new PageConsistency({ rowOrder: byTime });
    refused.check(countsPage(0, [0, { $date: Date.UTC(2026, 2, 1, 10) }], 4, types));
    expect(refused.check(countsPage(1, ['2026-03-01T09:00:00Z', 1], 4, types))).toMatchObject({ check: 'row-order', pageNumber: 1 });
    // Sorted by instant, printed as local time: 01:50 EDT then 01:10 EST when DST ends.
    const local = new PageConsistency({ rowOrder: byTime });
    local.check(countsPage(0, [0, '2026-11-01T01:50:00'], 4, types));
    expect(local.check(countsPage(1, ['2026-11-01T01:10:00', '2026-11-01T02:00:00'], 4, types))).toBeUndefined();
  });

  it('checks nothing when the page has no column of that header', () => {
    const checks = new PageConsistency({ rowOrder: { ...asc, header: 'Missing' } });
    checks.check(countsPage(0, [1, 9], 4));
    expect(checks.check(countsPage(1, [2, 3], 4))).toBeUndefined();
  });
});

describe('rowOrderOf', () => {
  const item = (header: string, dataType: string, extra: Record<string, unknown> = {}) => ({ header, formula: `[${header}]`, dataType, filters: [], ...extra });

  it('is the only ordered item, or the one with the unique lowest orderSequence, when it is a visible number or datetime', () => {
    expect(rowOrderOf({ items: [item('Type', 'text'), item('Count', 'number', { order: 'desc' })] }, sortKeyOf)).toEqual({
      header: 'Count',
      direction: 'desc',
      dataType: 'number',
      sortKey: sortKeyOf,
    });
    expect(
      rowOrderOf(
        { items: [item('Type', 'text', { order: 'asc', orderSequence: 1 }), item('Opened', 'datetime', { order: 'asc', orderSequence: 0 })] },
        sortKeyOf,
      ),
    ).toEqual({ header: 'Opened', direction: 'asc', dataType: 'datetime', sortKey: sortKeyOf });
  });

  it('is undefined whenever the primary order is unstated, ambiguous, hidden or text', () => {
    expect(rowOrderOf({ items: [item('Count', 'number')] }, sortKeyOf)).toBeUndefined();
    expect(rowOrderOf({ items: [item('Name', 'text', { order: 'asc' })] }, sortKeyOf)).toBeUndefined();
    expect(rowOrderOf({ items: [item('Count', 'number', { order: 'asc', hidden: true })] }, sortKeyOf)).toBeUndefined();
    // Where an item without a sequence sorts, and which of two equal sequences wins, is unstated.
    expect(
      rowOrderOf({ items: [item('Count', 'number', { order: 'asc' }), item('Severity', 'number', { order: 'asc', orderSequence: 0 })] }, sortKeyOf),
    ).toBeUndefined();
    expect(
      rowOrderOf(
        { items: [item('Count', 'number', { order: 'asc', orderSequence: 0 }), item('Severity', 'number', { order: 'asc', orderSequence: 0 })] },
        sortKeyOf,
      ),
    ).toBeUndefined();
    expect(
      rowOrderOf({ items: [item('Name', 'text', { order: 'asc', orderSequence: 0 }), item('Count', 'number', { order: 'asc', orderSequence: 1 })] }, sortKeyOf),
    ).toBeUndefined();
  });
});
