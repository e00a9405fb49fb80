/**
 * Snappy's block format (https://github.com/google/snappy/blob/main/format_description.txt), the
 * compressor (and, at the end, the reader an Iceberg merge needs): the uncompressed length as a varint, then literals and back-references
 * ("copies"). Like the reference compressor, the input is cut into 64 KiB fragments, each matched
 * greedily against a hash table of 4-byte sequences seen earlier in that fragment, so offsets fit
 * two bytes; after a run of misses the search skips ahead faster, so incompressible input costs
 * little. Written here rather than taken from a package: the pure-JS snappy packages allocate a
 * fresh output per call, and this one reuses its table and output between pages.
 */
export class SnappyCompressor {
  private readonly table = new Uint16Array(1 << HASH_BITS);
  private output = new Uint8Array(0);

  /** The compressed bytes of `input`: a view into this compressor's buffer, valid until the next call. */
  compress(input: Uint8Array): Uint8Array {
    const bound = 32 + input.length + Math.ceil(input.length / 6);
    if (this.output.length < bound) this.output = new Uint8Array(bound);
    const out = this.output;
    let o = writeVarint(out, 0, input.length);
    for (let start = 0; start < input.length; start += FRAGMENT) {
      o = this.compressFragment(input, start, Math.min(start + FRAGMENT, input.length), out, o);
    }
    return out.subarray(0, o);
  }

  private compressFragment(input: Uint8Array, start: number, end: number, out: Uint8Array, o: number): number {
    const table = this.table;
    table.fill(0);
    let literalStart = start;
    // Matches need 4 bytes at the candidate and 4 at the cursor; the tail is left as a literal.
    const limit = end - 4;
    let i = start + 1;
    let misses = 32;
    while (i <= limit) {
      const word = read32(input, i);
      const hash = Math.imul(word, 0x1e35a7bd) >>> (32 - HASH_BITS);
      const candidate = start + table[hash]!;
      table[hash] = i - start;
      if (candidate >= i || read32(input, candidate) !== word) {
        i += misses++ >> 5;
        continue;
      }
      misses = 32;
      let length = 4;
      while (i + length < end && input[candidate + length] === input[i + length]) length++;
      o = writeLiteral(input, literalStart, i, out, o);
      o = writeCopies(i - candidate, length, out, o);
      i += length;
      literalStart = i;
    }
    return writeLiteral(input, literalStart, end, out, o);
  }
}

const FRAGMENT = 1 << 16;
const HASH_BITS = 14;

function read32(bytes: Uint8Array, at: number): number {
  return bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24) | 0;
}

function writeVarint(out: Uint8Array, o: number, value: number): number {
  while (value >= 0x80) {
    out[o++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  out[o++] = value;
  return o;
}

function writeLiteral(input: Uint8Array, from: number, to: number, out: Uint8Array, o: number): number {
  const length = to - from;
  if (length === 0) return o;
  const n = length - 1;
  if (n < 60) out[o++] = n << 2;
  else if (n < 1 << 8) {
    out[o++] = 60 << 2;
    out[o++] = n;
  } else if (n < 1 << 16) {
    out[o++] = 61 << 2;
    out[o++] = n & 0xff;
    out[o++] = n >>> 8;
  } else {
    // Fragments are 64 KiB, so a literal never needs the 4-byte length form.
    out[o++] = 62 << 2;
    out[o++] = n & 0xff;
    out[o++] = (n >>> 8) & 0xff;
    out[o++] = n >>> 16;
  }
  if (length < 16) for (let k = 0; k < length; k++) out[o + k] = input[from + k]!;
  else out.set(input.subarray(from, to), o);
  return o + length;
}

/** Copies with a 2-byte offset, at most 64 bytes each (the 1-byte-offset form saves a byte; skipped for simplicity). */
function writeCopies(offset: number, length: number, out: Uint8Array, o: number): number {
  while (length > 0) {
    const piece = length > 64 ? 64 : length;
    out[o++] = ((piece - 1) << 2) | 2;
    out[o++] = offset & 0xff;
    out[o++] = offset >>> 8;
    length -= piece;
  }
  return o;
}

/**
 * Snappy's raw format read back (the varint length, then literals and copies with 1, 2 or 4 byte
 * offsets), for pages another writer compressed with it; `size` is the page header's uncompressed size.
 */
export function snappyUncompress(input: Uint8Array, size: number): Uint8Array {
  let position = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = input[position++]!;
    length += (byte & 0x7f) * 2 ** shift;
    if ((byte & 0x80) === 0) break;
  }
  if (length !== size) throw new RangeError(`snappy data of ${length} bytes where the page says ${size}`);
  const out = new Uint8Array(length);
  let written = 0;
  while (position < input.length) {
    const tag = input[position++]!;
    const kind = tag & 3;
    if (kind === 0) {
      let literal = tag >>> 2;
      if (literal >= 60) {
        const bytes = literal - 59;
        literal = 0;
        for (let index = 0; index < bytes; index++) literal |= input[position++]! << (8 * index);
      }
      literal += 1;
      if (position + literal > input.length || written + literal > length) throw new RangeError('a snappy literal runs past the end');
      out.set(input.subarray(position, position + literal), written);
      position += literal;
      written += literal;
      continue;
    }
    let copy: number;
    let offset: number;
    if (kind === 1) {
      copy = ((tag >>> 2) & 7) + 4;
      offset = ((tag >>> 5) << 8) | input[position++]!;
    } else if (kind === 2) {
      copy = (tag >>> 2) + 1;
      offset = input[position]! | (input[position + 1]! << 8);
      position += 2;
    } else {
      copy = (tag >>> 2) + 1;
      offset = (input[position]! | (input[position + 1]! << 8) | (input[position + 2]! << 16) | (input[position + 3]! << 24)) >>> 0;
      position += 4;
    }
    if (offset === 0 || offset > written || written + copy > length) throw new RangeError('a snappy copy reaches outside the output');
    // Byte by byte: a copy may overlap what it writes (a run).
    for (let index = 0; index < copy; index++, written++) out[written] = out[written - offset]!;
  }
  if (written !== length) throw new RangeError(`snappy data ends after ${written} of ${length} bytes`);
  return out;
}
