import { describe, expect, it } from 'vitest';
import type { ExportPage } from '../../src/source/export-response.js';
import { PageConsistency } from '../../src/source/page-checks.js';

function page(pageNumber: number, rows: number, totalRows: number, overrides: Partial<ExportPage> = {}): ExportPage {
  return {
    pageNumber,
    headers: ['Type', 'Count'],
    dataTypes: ['text', 'number'],
    rows: Array.from({ length: rows }, (_, i) => [`t${i}`, i]),
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
    expect(checks.rows).toBe(3);
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
});
