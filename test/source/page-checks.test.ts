import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExactNumber } from '../../src/source/json-body.js';
import type { ExportPage } from '../../src/source/export-response.js';
import { PageConsistency } from '../../src/source/page-checks.js';

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
    it('fails when the echoed query names another page, as drift', () => {
      const checks = new PageConsistency();
      expect(checks.check({ ...page(0, 2, 6), echoedPageNumber: 0 })).toBeUndefined();
      expect(checks.check({ ...page(1, 2, 6), echoedPageNumber: '1' })).toMatchObject({ check: 'page-echo', pageNumber: 1, drift: true });
    });

    it('fails when hasPrev contradicts the page number', () => {
      const first = page(0, 2, 6);
      first.navigation.hasPrev = true;
      expect(new PageConsistency().check(first)).toMatchObject({ check: 'hasPrev', pageNumber: 0, drift: true });
      const checks = new PageConsistency();
      checks.check(page(0, 2, 6));
      const second = page(1, 2, 6);
      second.navigation.hasPrev = false;
      expect(checks.check(second)).toMatchObject({ check: 'hasPrev', pageNumber: 1 });
    });

    it('fails when a page repeats the rows of any earlier page, naming it', () => {
      const checks = new PageConsistency();
      expect(checks.check(page(0, 2, 6))).toBeUndefined();
      expect(checks.check(page(1, 2, 6))).toBeUndefined();
      expect(checks.check({ ...page(2, 2, 6), rows: page(0, 2, 6).rows })).toMatchObject({ check: 'page-repeated', pageNumber: 2, drift: true, detail: expect.stringContaining("identical to page 0's") });
    });

    it('accepts identical pages when each echoes its own page number (a table that repeats rows)', () => {
      const checks = new PageConsistency();
      const same = [['Outage', 1], ['Outage', 1]];
      expect(checks.check({ ...page(0, 2, 4), rows: same, echoedPageNumber: 0 })).toBeUndefined();
      const last = { ...page(1, 2, 4), rows: same, echoedPageNumber: 1 };
      last.navigation.hasNext = false;
      expect(checks.check(last)).toBeUndefined();
      expect(checks.finish(1)).toBeUndefined();
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
          expect(checks.check({ ...page(2, first.length, total), rows: first.map((row) => [...row]) })).toMatchObject({ check: 'page-repeated', detail: expect.stringContaining("identical to page 0's") });
        }),
        { numRuns: 300 },
      );
    });
  });
});

/** Equal as the API sent it: same type and value (-0 and 0 differ as doubles; NaN is NaN). */
function sameCell(a: unknown, b: unknown): boolean {
  if (typeof a === 'object' && a !== null) return typeof b === 'object' && b !== null && JSON.stringify(a) === JSON.stringify(b) && a.constructor === b.constructor;
  return Object.is(a, b);
}
