import { describe, expect, it } from 'vitest';
import { asText, rowsOf, typedText } from './iceberg-test-rows.js';

// The Iceberg tests' expected rows come from the CSV sink's bytes for the same rows; this holds
// that reading to the typed values themselves, so neither side can drift unseen ('' and null apart,
// longs beyond 2^53, 38-digit decimals, a 1938 instant, whole doubles).
describe('the Iceberg tests expected rows', () => {
  it("read from the CSV sink's records equal the typed values' text", () => {
    const rows = rowsOf(0, 60);
    expect(rows.map(asText)).toEqual(rows.map(typedText));
    expect(asText(rows[1]!)[2]).toBe('');
    expect(asText(rows[0]!)[2]).toBeNull();
  });
});
