import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { avroContainerFile } from '../../../src/sinks/iceberg/avro/avro-container.js';
import type { AvroValue } from '../../../src/sinks/iceberg/avro/avro-encoder.js';
import type { AvroSchema } from '../../../src/sinks/iceberg/avro/avro-schema.js';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { describeUnless, missing } from '../../support/skip.js';

const python = icebergPythonOrSkip();

// A schema shaped like Iceberg's manifest entries: field ids as attributes, nullable unions,
// 64-bit longs, nested records, arrays with element ids, maps, fixed and bytes.
const SCHEMA = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    { name: 'snapshot_id', type: ['null', 'long'], default: null, 'field-id': 1 },
    { name: 'sequence_number', type: ['null', 'long'], default: null, 'field-id': 3 },
    {
      name: 'data_file',
      'field-id': 2,
      type: {
        type: 'record',
        name: 'r2',
        fields: [
          { name: 'file_path', type: 'string', doc: 'Location URI with FS scheme', 'field-id': 100 },
          { name: 'record_count', type: 'long', 'field-id': 103 },
          { name: 'ratio', type: 'double', 'field-id': 900 },
          { name: 'small', type: 'float', 'field-id': 901 },
          { name: 'flag', type: 'boolean', 'field-id': 902 },
          { name: 'day', type: { type: 'int', logicalType: 'date' }, 'field-id': 903 },
          { name: 'hash', type: { type: 'fixed', name: 'fixed_4', size: 4 }, 'field-id': 904 },
          { name: 'key_metadata', type: ['null', 'bytes'], default: null, 'field-id': 131 },
          {
            name: 'split_offsets',
            type: ['null', { type: 'array', items: 'long', 'element-id': 133 }],
            default: null,
            'field-id': 132,
          },
          {
            name: 'column_sizes',
            type: [
              'null',
              {
                type: 'array',
                logicalType: 'map',
                items: {
                  type: 'record',
                  name: 'k117_v118',
                  fields: [
                    { name: 'key', type: 'int', 'field-id': 117 },
                    { name: 'value', type: 'long', 'field-id': 118 },
                  ],
                },
              },
            ],
            default: null,
            'field-id': 108,
          },
          { name: 'properties', type: { type: 'map', values: 'string' }, 'field-id': 905 },
        ],
      },
    },
  ],
} as const satisfies AvroSchema;

const MAX_LONG = 2n ** 63n - 1n;
const MIN_LONG = -(2n ** 63n);

function record(index: number): AvroValue {
  return {
    status: index % 3,
    snapshot_id: index === 0 ? MAX_LONG : index === 1 ? MIN_LONG : index === 2 ? null : 8_936_318_292_717_531_234n + BigInt(index),
    sequence_number: index === 3 ? 0 : BigInt(index) * 1_000_000_007n,
    data_file: {
      file_path: `file:/tmp/wh/ns/t/data/0000${index}-é✓\u{1F600}.parquet`,
      record_count: index === 4 ? 2n ** 53n + 1n : BigInt(index),
      ratio: index === 5 ? -0.1 : index / 7,
      small: 0.5,
      flag: index % 2 === 0,
      day: index === 6 ? -11_000 : 19_000 + index,
      hash: new Uint8Array([index, 255, 0, 128]),
      key_metadata: index % 2 === 0 ? null : new Uint8Array(index === 7 ? 0 : 300).fill(index),
      split_offsets: index % 4 === 0 ? null : index === 5 ? [] : [4n, 1n << 40n, -1n],
      column_sizes: [
        { key: 1, value: BigInt(index * 64) },
        { key: 2_147_483_647, value: -2_147_483_649n },
      ],
      properties:
        index === 8
          ? new Map([
              ['a', ''],
              ['ü', 'x'.repeat(200)],
            ])
          : {},
    },
  };
}

/** The reader's text of a record (integers as digits, doubles by repr, bytes as hex). */
function asRead(value: AvroValue | undefined, key = ''): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  // fastavro applies the logical type: the day number reads back as its date.
  if (typeof value === 'number' && key === 'day') return new Date(value * 86_400_000).toISOString().slice(0, 10);
  if (typeof value === 'number') return Number.isInteger(value) && key !== 'ratio' && key !== 'small' ? String(value) : pythonRepr(value);
  if (typeof value === 'boolean' || typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
  if (Array.isArray(value)) return value.map((item) => asRead(item as AvroValue, key));
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [k, asRead(v as AvroValue)]));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asRead(v as AvroValue, k)]));
}

/** Python's repr of a double: the shortest text that reads back as it, with a `.0` on whole numbers. */
function pythonRepr(value: number): string {
  const text = String(value);
  return /^-?\d+$/.test(text) ? `${text}.0` : text;
}

describeUnless(missing('the Iceberg readers (pyiceberg, fastavro)', python))('avroContainerFile read back by fastavro (Iceberg readers venv)', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'tilehouse-avro-'));
  });
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  for (const codec of ['null', 'deflate'] as const) {
    it(`writes every value of every type exactly, in blocks, with the ${codec} codec`, async () => {
      const records = Array.from({ length: 9 }, (_, index) => record(index));
      const bytes = avroContainerFile(SCHEMA, records, { codec, blockRecords: 4, metadata: { 'format-version': '2', schema: '{"x":1}' } });
      const path = join(directory, `entries-${codec}.avro`);
      await writeFile(path, bytes);
      const read = await readIceberg(python!, 'avro', { path });
      // The header's schema is the one given, byte for byte: field ids and docs kept.
      expect(read.schema).toBe(JSON.stringify(SCHEMA));
      expect(JSON.parse(read.schema).fields[3].type.fields[0]).toEqual({
        name: 'file_path',
        type: 'string',
        doc: 'Location URI with FS scheme',
        'field-id': 100,
      });
      expect(read.codec).toBe(codec);
      expect(read.metadata).toMatchObject({ 'format-version': '2', schema: '{"x":1}' });
      expect(read.records).toEqual(records.map((entry) => asRead(entry)));
    });
  }

  it('writes a file with the schema and no records', async () => {
    const path = join(directory, 'empty.avro');
    await writeFile(path, avroContainerFile(SCHEMA, []));
    const read = await readIceberg(python!, 'avro', { path });
    expect(read.records).toEqual([]);
    expect(read.schema).toBe(JSON.stringify(SCHEMA));
  });
});

describe('avroContainerFile refuses what does not fit', () => {
  const base = record(1) as Record<string, AvroValue>;
  it('names the path of a value outside its type', () => {
    expect(() => avroContainerFile(SCHEMA, [{ ...base, status: 2 ** 31 }])).toThrow(/record 0\.status: expected a 32-bit int, got number 2147483648/);
    expect(() => avroContainerFile(SCHEMA, [{ ...base, snapshot_id: 2n ** 63n }])).toThrow(/record 0\.snapshot_id: expected a 64-bit long/);
    expect(() => avroContainerFile(SCHEMA, [{ ...base, status: null }])).toThrow(/record 0\.status: expected a 32-bit int, got null/);
    const file = (base.data_file as Record<string, AvroValue>) ?? {};
    expect(() => avroContainerFile(SCHEMA, [{ ...base, data_file: { ...file, hash: new Uint8Array(3) } }])).toThrow(
      /record 0\.data_file\.hash: expected 4 bytes/,
    );
  });

  it('keeps the avro.* header keys its own', () => {
    expect(() => avroContainerFile(SCHEMA, [], { metadata: { 'avro.codec': 'snappy' } })).toThrow(/avro\.codec/);
  });
});
