import { ByteSink } from './byte-sink.js';

/**
 * Thrift's compact protocol, the encoding of Parquet's page headers and footer: just the part
 * Parquet's structures use (no maps, sets or doubles). Numbers are JavaScript numbers: every
 * integer Parquet's metadata holds here (offsets, sizes, counts) is below 2^53.
 */
export const CompactType = {
  BoolTrue: 1,
  BoolFalse: 2,
  Byte: 3,
  I16: 4,
  I32: 5,
  I64: 6,
  Double: 7,
  Binary: 8,
  List: 9,
  Set: 10,
  Map: 11,
  Struct: 12,
} as const;
export type CompactType = (typeof CompactType)[keyof typeof CompactType];

const utf8 = new TextEncoder();

export class ThriftWriter {
  readonly sink: ByteSink;
  private lastFieldId = 0;
  private readonly outerFieldIds: number[] = [];

  constructor(sink = new ByteSink(256)) {
    this.sink = sink;
  }

  i32(id: number, value: number): this {
    this.fieldHeader(id, CompactType.I32);
    this.sink.varint(zigzag(value));
    return this;
  }

  i64(id: number, value: number): this {
    this.fieldHeader(id, CompactType.I64);
    this.sink.varint(zigzag(value));
    return this;
  }

  bool(id: number, value: boolean): this {
    this.fieldHeader(id, value ? CompactType.BoolTrue : CompactType.BoolFalse);
    return this;
  }

  string(id: number, value: string): this {
    this.fieldHeader(id, CompactType.Binary);
    this.listString(value);
    return this;
  }

  /** A struct field; close it with `end()`. */
  struct(id: number): this {
    this.fieldHeader(id, CompactType.Struct);
    return this.enter();
  }

  /** An empty struct field (Parquet's unit types: StringType, DateType, MicroSeconds…). */
  empty(id: number): this {
    return this.struct(id).end();
  }

  list(id: number, elementType: CompactType, size: number): this {
    this.fieldHeader(id, CompactType.List);
    if (size < 15) this.sink.byte((size << 4) | elementType);
    else {
      this.sink.byte(0xf0 | elementType);
      this.sink.varint(size);
    }
    return this;
  }

  listI32(value: number): this {
    this.sink.varint(zigzag(value));
    return this;
  }

  listString(value: string): this {
    const bytes = utf8.encode(value);
    this.sink.varint(bytes.length);
    this.sink.append(bytes);
    return this;
  }

  /** A struct element of a list; close it with `end()`. */
  listStruct(): this {
    return this.enter();
  }

  /** Ends the innermost struct (or the top-level one, when nothing is open). */
  end(): this {
    this.sink.byte(0);
    this.lastFieldId = this.outerFieldIds.pop() ?? 0;
    return this;
  }

  private enter(): this {
    this.outerFieldIds.push(this.lastFieldId);
    this.lastFieldId = 0;
    return this;
  }

  private fieldHeader(id: number, type: CompactType): void {
    const delta = id - this.lastFieldId;
    if (delta > 0 && delta <= 15) this.sink.byte((delta << 4) | type);
    else {
      this.sink.byte(type);
      this.sink.varint(zigzag(id));
    }
    this.lastFieldId = id;
  }
}

function zigzag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

/** Thrown by ThriftReader when the bytes end early or hold what the protocol cannot. */
export class ThriftDecodeError extends Error {}

/** A field as the reader met it: its id and compact type (0 at the struct's end). */
export interface ThriftField {
  id: number;
  type: number;
}

/**
 * Reads compact-protocol structs field by field; the caller handles the fields it wants and
 * `skip`s the rest. Depth is bounded so hostile bytes cannot exhaust the stack.
 */
export class ThriftReader {
  position: number;
  private lastFieldId = 0;
  private readonly outerFieldIds: number[] = [];

  constructor(
    private readonly bytes: Uint8Array,
    start = 0,
    private readonly end = bytes.length,
  ) {
    this.position = start;
  }

  /** The next field of the current struct, or type 0 at its end (then the struct is left). */
  field(): ThriftField {
    const header = this.byte();
    if (header === 0) {
      this.lastFieldId = this.outerFieldIds.pop() ?? 0;
      return { id: 0, type: 0 };
    }
    const delta = header >> 4;
    const id = delta === 0 ? unzigzag(this.varint()) : this.lastFieldId + delta;
    this.lastFieldId = id;
    return { id, type: header & 0x0f };
  }

  /** Enters a struct value (after its field header or as a list element). */
  enterStruct(): void {
    if (this.outerFieldIds.length > 64) throw new ThriftDecodeError('structs nested too deeply');
    this.outerFieldIds.push(this.lastFieldId);
    this.lastFieldId = 0;
  }

  int(): number {
    return unzigzag(this.varint());
  }

  string(): string {
    const length = this.varint();
    if (this.position + length > this.end) throw new ThriftDecodeError('a string runs past the end');
    const text = new TextDecoder('utf-8', { fatal: true }).decode(this.bytes.subarray(this.position, this.position + length));
    this.position += length;
    return text;
  }

  /** A list header: its element type and size. */
  listHeader(): { elementType: number; size: number } {
    const header = this.byte();
    const size = header >> 4 === 15 ? this.varint() : header >> 4;
    return { elementType: header & 0x0f, size };
  }

  /** Skips a value of compact type `type` (a field's value or a list element). */
  skip(type: number): void {
    switch (type) {
      case CompactType.BoolTrue:
      case CompactType.BoolFalse:
        return;
      case CompactType.Byte:
        this.byte();
        return;
      case CompactType.I16:
      case CompactType.I32:
      case CompactType.I64:
        this.varint();
        return;
      case CompactType.Double:
        this.advance(8);
        return;
      case CompactType.Binary:
        this.advance(this.varint());
        return;
      case CompactType.List:
      case CompactType.Set:
        this.skipList();
        return;
      case CompactType.Map:
        this.skipMap();
        return;
      case CompactType.Struct:
        this.skipStruct();
        return;
      default:
        throw new ThriftDecodeError(`unknown compact type ${type}`);
    }
  }

  private skipList(): void {
    const { elementType, size } = this.listHeader();
    // Booleans in a list take a byte each, unlike boolean fields.
    for (let index = 0; index < size; index++)
      elementType === CompactType.BoolTrue || elementType === CompactType.BoolFalse ? this.byte() : this.skip(elementType);
  }

  private skipMap(): void {
    const size = this.varint();
    if (size === 0) return;
    const types = this.byte();
    for (let index = 0; index < size; index++) {
      this.skip(types >> 4);
      this.skip(types & 0x0f);
    }
  }

  private skipStruct(): void {
    this.enterStruct();
    for (let field = this.field(); field.type !== 0; field = this.field()) this.skip(field.type);
  }

  private byte(): number {
    if (this.position >= this.end) throw new ThriftDecodeError('the bytes end inside a structure');
    return this.bytes[this.position++]!;
  }

  private advance(count: number): void {
    if (this.position + count > this.end) throw new ThriftDecodeError('a value runs past the end');
    this.position += count;
  }

  private varint(): number {
    let value = 0;
    let scale = 1;
    for (let shift = 0; shift < 70; shift += 7) {
      const byte = this.byte();
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return value;
      scale *= 128;
    }
    throw new ThriftDecodeError('a varint is longer than 10 bytes');
  }
}

function unzigzag(value: number): number {
  return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
}
