import { AvroEncodeError } from './avro-errors.js';
import type { AvroPrimitive, AvroSchema } from './avro-schema.js';

/**
 * Avro's binary encoding (the specification's "Binary Encoding"), for the values the Iceberg
 * metadata writer builds: a schema is compiled once into a function that appends a value's bytes.
 *
 * Values: `null`; booleans; `int` a number (32-bit); `long` a bigint (snapshot ids and sequence
 * numbers use all 63 bits, beyond a double) or a safe-integer number; `float`/`double` numbers;
 * `bytes`/`fixed` Uint8Arrays; `string` strings; a record an object keyed by field name (a missing
 * field is null); an array an array; a map a Map or an object. A union picks the first branch the
 * value fits (`null` for null, else the first non-null branch): Iceberg's unions are `["null", T]`.
 */
export type AvroValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | readonly AvroValue[]
  | ReadonlyMap<string, AvroValue>
  | { readonly [key: string]: AvroValue | undefined };

/** A growable buffer written front to back. */
export class AvroBytes {
  bytes = Buffer.allocUnsafe(256);
  length = 0;

  private reserve(extra: number): void {
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

  raw(source: Uint8Array): void {
    this.reserve(source.length);
    this.bytes.set(source, this.length);
    this.length += source.length;
  }

  /** A long: zigzag, then a base-128 varint, least significant group first. */
  long(value: bigint): void {
    let zigzag = BigInt.asUintN(64, (value << 1n) ^ (value >> 63n));
    this.reserve(10);
    while (zigzag >= 0x80n) {
      this.bytes[this.length++] = Number(zigzag & 0x7fn) | 0x80;
      zigzag >>= 7n;
    }
    this.bytes[this.length++] = Number(zigzag);
  }

  /** An int: the same zigzag varint on 32 bits, without BigInt. */
  int(value: number): void {
    let zigzag = ((value << 1) ^ (value >> 31)) >>> 0;
    this.reserve(5);
    while (zigzag >= 0x80) {
      this.bytes[this.length++] = (zigzag & 0x7f) | 0x80;
      zigzag >>>= 7;
    }
    this.bytes[this.length++] = zigzag;
  }

  /** A count or length; a long on the wire. */
  count(value: number): void {
    if (value <= 0x3fffffff) this.int(value);
    else this.long(BigInt(value));
  }

  double(value: number): void {
    this.reserve(8);
    this.bytes.writeDoubleLE(value, this.length);
    this.length += 8;
  }

  float(value: number): void {
    this.reserve(4);
    this.bytes.writeFloatLE(value, this.length);
    this.length += 4;
  }

  /** Length-prefixed bytes. */
  blob(value: Uint8Array): void {
    this.count(value.length);
    this.raw(value);
  }

  string(value: string): void {
    this.blob(Buffer.from(value, 'utf8'));
  }

  /** A copy of what was written; the buffer is then empty and reused. */
  take(): Buffer {
    const copy = Buffer.from(this.bytes.subarray(0, this.length));
    this.length = 0;
    return copy;
  }
}

type Encode = (out: AvroBytes, value: AvroValue | undefined, path: string) => void;

const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/** Compiles `schema` into an encoder of values; refuses a schema it does not know. */
export function compileAvroSchema(schema: AvroSchema, path = 'value'): Encode {
  if (typeof schema === 'string') return primitive(schema, path);
  if (Array.isArray(schema)) return union(schema as readonly AvroSchema[], path);
  const complex = schema as Exclude<AvroSchema, string | readonly AvroSchema[]>;
  switch (complex.type) {
    case 'record': {
      const record = complex as Extract<AvroSchema, { type: 'record' }>;
      const fields = record.fields.map((field) => ({ name: field.name, encode: compileAvroSchema(field.type, `${path}.${field.name}`) }));
      return (out, value, at) => {
        if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Uint8Array || value instanceof Map) {
          throw new AvroEncodeError(at, `expected a record ${record.name}, got ${describe(value)}`);
        }
        const object = value as Record<string, AvroValue | undefined>;
        for (const field of fields) field.encode(out, object[field.name] ?? null, `${at}.${field.name}`);
      };
    }
    case 'array': {
      const items = compileAvroSchema((complex as Extract<AvroSchema, { type: 'array' }>).items, `${path}[]`);
      return (out, value, at) => {
        if (!Array.isArray(value)) throw new AvroEncodeError(at, `expected an array, got ${describe(value)}`);
        // One block holding every item, then the empty block that ends the array.
        if (value.length > 0) {
          out.count(value.length);
          value.forEach((item, index) => items(out, item as AvroValue, `${at}[${index}]`));
        }
        out.int(0);
      };
    }
    case 'map': {
      const values = compileAvroSchema((complex as Extract<AvroSchema, { type: 'map' }>).values, `${path}{}`);
      return (out, value, at) => {
        const entries = mapEntries(value, at);
        if (entries.length > 0) {
          out.count(entries.length);
          for (const [key, item] of entries) {
            out.string(key);
            values(out, item, `${at}{${key}}`);
          }
        }
        out.int(0);
      };
    }
    case 'fixed': {
      const { size, name } = complex as Extract<AvroSchema, { type: 'fixed' }>;
      return (out, value, at) => {
        if (!(value instanceof Uint8Array) || value.length !== size)
          throw new AvroEncodeError(at, `expected ${size} bytes (fixed ${name}), got ${describe(value)}`);
        out.raw(value);
      };
    }
    default:
      // A primitive written as an object to carry attributes (a logical type): encoded as the primitive.
      if (typeof complex.type === 'string' && PRIMITIVES.has(complex.type as AvroPrimitive)) return primitive(complex.type as AvroPrimitive, path);
      throw new AvroEncodeError(path, `schema type ${JSON.stringify(complex.type)} is not one this writer knows`);
  }
}

const PRIMITIVES = new Set<AvroPrimitive>(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

function primitive(type: string, path: string): Encode {
  switch (type) {
    case 'null':
      return (_out, value, at) => {
        if (value !== null && value !== undefined) throw new AvroEncodeError(at, `expected null, got ${describe(value)}`);
      };
    case 'boolean':
      return (out, value, at) => {
        if (typeof value !== 'boolean') throw new AvroEncodeError(at, `expected a boolean, got ${describe(value)}`);
        out.byte(value ? 1 : 0);
      };
    case 'int':
      return (out, value, at) => {
        if (typeof value !== 'number' || !Number.isInteger(value) || value < INT_MIN || value > INT_MAX)
          throw new AvroEncodeError(at, `expected a 32-bit int, got ${describe(value)}`);
        out.int(value);
      };
    case 'long':
      return (out, value, at) => {
        const long = typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : value;
        if (typeof long !== 'bigint' || long < LONG_MIN || long > LONG_MAX) throw new AvroEncodeError(at, `expected a 64-bit long, got ${describe(value)}`);
        out.long(long);
      };
    case 'float':
    case 'double':
      return (out, value, at) => {
        if (typeof value !== 'number') throw new AvroEncodeError(at, `expected a ${type}, got ${describe(value)}`);
        if (type === 'float') out.float(value);
        else out.double(value);
      };
    case 'bytes':
      return (out, value, at) => {
        if (!(value instanceof Uint8Array)) throw new AvroEncodeError(at, `expected bytes, got ${describe(value)}`);
        out.blob(value);
      };
    case 'string':
      return (out, value, at) => {
        if (typeof value !== 'string') throw new AvroEncodeError(at, `expected a string, got ${describe(value)}`);
        out.string(value);
      };
    default:
      throw new AvroEncodeError(path, `schema type ${JSON.stringify(type)} is not one this writer knows`);
  }
}

function union(branches: readonly AvroSchema[], path: string): Encode {
  const compiled = branches.map((branch, index) => ({ isNull: branch === 'null', encode: compileAvroSchema(branch, `${path}<${index}>`) }));
  const nullIndex = compiled.findIndex((branch) => branch.isNull);
  return (out, value, at) => {
    if (value === null || value === undefined) {
      if (nullIndex < 0) throw new AvroEncodeError(at, 'null given to a union without a null branch');
      out.int(nullIndex);
      return;
    }
    // The first non-null branch that takes the value; a failed try leaves nothing behind, as
    // each attempt writes into a scratch buffer first.
    let last: unknown;
    for (const [index, branch] of compiled.entries()) {
      if (branch.isNull) continue;
      const scratch = new AvroBytes();
      try {
        branch.encode(scratch, value, at);
      } catch (error) {
        last = error;
        continue;
      }
      out.int(index);
      out.raw(scratch.bytes.subarray(0, scratch.length));
      return;
    }
    throw last instanceof Error ? last : new AvroEncodeError(at, `no branch of the union takes ${describe(value)}`);
  };
}

function mapEntries(value: AvroValue | undefined, at: string): [string, AvroValue][] {
  if (value instanceof Map) return [...(value as ReadonlyMap<string, AvroValue>).entries()];
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Uint8Array)) {
    return Object.entries(value as Record<string, AvroValue>);
  }
  throw new AvroEncodeError(at, `expected a map, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}
