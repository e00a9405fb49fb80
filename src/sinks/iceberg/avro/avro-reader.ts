import { inflateRawSync } from 'node:zlib';
import type { AvroValue } from './avro-encoder.js';
import { AvroEncodeError } from './avro-errors.js';
import type { AvroSchema } from './avro-schema.js';

/**
 * Reads an Avro object container file whole, by the schema in its own header (the writer's
 * schema): the Iceberg writer reads the manifest list of the snapshot it builds on, which another
 * writer (Spark, pyiceberg, the REST server) may have written. Longs come back as bigint, ints and
 * doubles as numbers, bytes and fixed as Buffers, records as objects, maps as objects, a union as
 * its branch's value. Codecs: null and deflate (what Iceberg's writers use by default).
 */
export interface AvroContainer {
  schema: AvroSchema;
  metadata: Record<string, string>;
  records: AvroValue[];
}

class Cursor {
  offset = 0;
  constructor(
    readonly bytes: Buffer,
    readonly source: string,
  ) {}

  fail(reason: string): never {
    throw new AvroFileInvalidError(this.source, `${reason} at byte ${this.offset}`);
  }

  long(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.offset >= this.bytes.length) this.fail('a varint runs past the end');
      const byte = this.bytes[this.offset++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) break;
      shift += 7n;
      if (shift > 63n) this.fail('a varint longer than 10 bytes');
    }
    return (result >> 1n) ^ -(result & 1n);
  }

  count(): number {
    const value = this.long();
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`a count of ${value}`);
    return Number(value);
  }

  take(length: number): Buffer {
    if (length < 0 || this.offset + length > this.bytes.length) this.fail(`${length} bytes run past the end`);
    const slice = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return slice;
  }
}

/** Bytes that are not an Avro container file this reader reads (a bug or a foreign codec). */
export class AvroFileInvalidError extends AvroEncodeError {}

type Decode = (cursor: Cursor) => AvroValue;

/** Parses `bytes` as an Avro object container file. */
export function readAvroContainer(bytes: Buffer, source = 'avro file'): AvroContainer {
  const cursor = new Cursor(bytes, source);
  const magic = cursor.take(4);
  if (!(magic[0] === 0x4f && magic[1] === 0x62 && magic[2] === 0x6a && magic[3] === 0x01)) cursor.fail('no "Obj\\x01" magic');
  const metadata: Record<string, string> = {};
  for (let count = cursor.count(); count !== 0; count = cursor.count()) {
    if (count < 0) cursor.count(); // a negative count is followed by the block's size in bytes
    for (let index = 0; index < Math.abs(count); index++) {
      const key = cursor.take(cursor.count()).toString('utf8');
      metadata[key] = cursor.take(cursor.count()).toString('utf8');
    }
  }
  const sync = Buffer.from(cursor.take(16));
  const schemaText = metadata['avro.schema'];
  if (schemaText === undefined) return cursor.fail('no avro.schema in the header');
  const schema = JSON.parse(schemaText) as AvroSchema;
  const codec = metadata['avro.codec'] ?? 'null';
  if (codec !== 'null' && codec !== 'deflate') cursor.fail(`codec ${JSON.stringify(codec)} is not null or deflate`);
  const decode = compileDecoder(schema, named(schema));
  const records: AvroValue[] = [];
  while (cursor.offset < bytes.length) {
    const count = cursor.count();
    const size = cursor.count();
    const raw = cursor.take(size);
    const data = codec === 'deflate' ? inflateRawSync(raw) : raw;
    const block = new Cursor(Buffer.from(data), source);
    for (let index = 0; index < count; index++) records.push(decode(block));
    if (!cursor.take(16).equals(sync)) cursor.fail('a block does not end with the sync marker');
  }
  return { schema, metadata, records };
}

/** Named types (records, fixed) by name, for schemas that refer to one by name later. */
function named(schema: AvroSchema, found = new Map<string, AvroSchema>()): Map<string, AvroSchema> {
  if (typeof schema === 'string') return found;
  if (Array.isArray(schema)) {
    for (const branch of schema as readonly AvroSchema[]) named(branch, found);
    return found;
  }
  const complex = schema as Record<string, unknown>;
  if ((complex.type === 'record' || complex.type === 'fixed') && typeof complex.name === 'string') found.set(complex.name, schema);
  if (complex.type === 'record') for (const field of complex.fields as { type: AvroSchema }[]) named(field.type, found);
  if (complex.type === 'array') named(complex.items as AvroSchema, found);
  if (complex.type === 'map') named(complex.values as AvroSchema, found);
  return found;
}

function compileDecoder(schema: AvroSchema, names: Map<string, AvroSchema>): Decode {
  if (typeof schema === 'string') {
    const primitive = primitiveDecoder(schema);
    if (primitive) return primitive;
    const reference = names.get(schema);
    if (!reference) throw new AvroFileInvalidError('schema', `unknown type ${JSON.stringify(schema)}`);
    return (cursor) => compileDecoder(reference, names)(cursor);
  }
  if (Array.isArray(schema)) {
    const branches = (schema as readonly AvroSchema[]).map((branch) => compileDecoder(branch, names));
    return (cursor) => {
      const index = cursor.count();
      const branch = branches[index];
      if (!branch) return cursor.fail(`union branch ${index} of ${branches.length}`);
      return branch(cursor);
    };
  }
  const complex = schema as Record<string, unknown>;
  switch (complex.type) {
    case 'record': {
      const fields = (complex.fields as { name: string; type: AvroSchema }[]).map((field) => ({ name: field.name, decode: compileDecoder(field.type, names) }));
      return (cursor) => {
        const record: Record<string, AvroValue> = {};
        for (const field of fields) record[field.name] = field.decode(cursor);
        return record;
      };
    }
    case 'array': {
      const items = compileDecoder(complex.items as AvroSchema, names);
      return (cursor) => {
        const out: AvroValue[] = [];
        for (let count = cursor.count(); count !== 0; count = cursor.count()) {
          if (count < 0) cursor.count();
          for (let index = 0; index < Math.abs(count); index++) out.push(items(cursor));
        }
        return out;
      };
    }
    case 'map': {
      const values = compileDecoder(complex.values as AvroSchema, names);
      return (cursor) => {
        const out: Record<string, AvroValue> = {};
        for (let count = cursor.count(); count !== 0; count = cursor.count()) {
          if (count < 0) cursor.count();
          for (let index = 0; index < Math.abs(count); index++) {
            const key = cursor.take(cursor.count()).toString('utf8');
            out[key] = values(cursor);
          }
        }
        return out;
      };
    }
    case 'fixed': {
      const size = complex.size as number;
      return (cursor) => Buffer.from(cursor.take(size));
    }
    default: {
      const primitive = typeof complex.type === 'string' ? primitiveDecoder(complex.type) : undefined;
      if (!primitive) throw new AvroFileInvalidError('schema', `type ${JSON.stringify(complex.type)} is not one this reader knows`);
      return primitive;
    }
  }
}

function primitiveDecoder(type: string): Decode | undefined {
  switch (type) {
    case 'null':
      return () => null;
    case 'boolean':
      return (cursor) => cursor.take(1)[0] === 1;
    case 'int':
      return (cursor) => cursor.count();
    case 'long':
      return (cursor) => cursor.long();
    case 'float':
      return (cursor) => cursor.take(4).readFloatLE(0);
    case 'double':
      return (cursor) => cursor.take(8).readDoubleLE(0);
    case 'bytes':
      return (cursor) => Buffer.from(cursor.take(cursor.count()));
    case 'string':
      return (cursor) => cursor.take(cursor.count()).toString('utf8');
    default:
      return undefined;
  }
}
