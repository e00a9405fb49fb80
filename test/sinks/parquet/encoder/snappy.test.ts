import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SnappyCompressor } from '../../../../src/sinks/parquet/encoder/snappy.js';

// What snappy's bytes decode to is checked by DuckDB (parquet-round-trip.property.test.ts); these
// hold the compressor to actually compressing, and to its bound on incompressible input.
describe('SnappyCompressor', () => {
  it('starts with the uncompressed length as a varint', () => {
    const out = new SnappyCompressor().compress(new Uint8Array(300));
    expect([...out.subarray(0, 2)]).toEqual([0xac, 0x02]);
  });

  it('turns repetitive input into copies (under 6% of its size), across 64 KiB fragments', () => {
    const input = new TextEncoder().encode('abc'.repeat(100_000));
    expect(new SnappyCompressor().compress(input).length).toBeLessThan(input.length * 0.06);
  });

  it("keeps random input within snappy's bound, and stays usable for the next call", () => {
    const compressor = new SnappyCompressor();
    const input = randomBytes(200_000);
    expect(compressor.compress(input).length).toBeLessThanOrEqual(32 + input.length + input.length / 6);
    const small = compressor.compress(new Uint8Array([1, 2, 3]));
    expect([...small]).toEqual([3, 2 << 2, 1, 2, 3]);
  });
});
