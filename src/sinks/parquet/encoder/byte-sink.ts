/**
 * A growable byte buffer written front to back, reused between pages and row groups: its memory
 * is the largest page it has held, not the sum of all of them.
 */
export class ByteSink {
  bytes: Buffer;
  length = 0;

  constructor(initialCapacity = 1024) {
    this.bytes = Buffer.allocUnsafe(initialCapacity);
  }

  /** Makes room for `extra` more bytes after `length`. */
  reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.bytes.length) return;
    let capacity = this.bytes.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = Buffer.allocUnsafe(capacity);
    this.bytes.copy(grown, 0, 0, this.length);
    this.bytes = grown;
  }

  byte(value: number): void {
    this.reserve(1);
    this.bytes[this.length++] = value;
  }

  append(source: Uint8Array): void {
    this.reserve(source.length);
    this.bytes.set(source, this.length);
    this.length += source.length;
  }

  /** Unsigned LEB128, for numbers up to 2^53. */
  varint(value: number): void {
    this.reserve(10);
    const bytes = this.bytes;
    while (value >= 0x80) {
      bytes[this.length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    bytes[this.length++] = value;
  }

  /** A copy of the bytes written so far (the sink is then free to be reset and reused). */
  take(): Uint8Array {
    const copy = new Uint8Array(this.length);
    copy.set(this.bytes.subarray(0, this.length));
    this.length = 0;
    return copy;
  }
}
