import { randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { AvroBytes, type AvroValue, compileAvroSchema } from './avro-encoder.js';
import { AvroEncodeError } from './avro-errors.js';
import type { AvroSchema } from './avro-schema.js';

/** The codecs every Avro reader knows; Iceberg's readers (Java, pyiceberg, DuckDB) read both. */
export type AvroCodec = 'null' | 'deflate';

export interface AvroContainerOptions {
  codec?: AvroCodec;
  /** More header metadata (Iceberg's manifests carry their schema, spec and format version here). */
  metadata?: Readonly<Record<string, string>>;
  /** Records per block; a block is compressed as one. */
  blockRecords?: number;
  /** The 16-byte sync marker; random when not given (tests pin it). */
  sync?: Uint8Array;
}

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]); // "Obj" 1

/**
 * An Avro object container file (the specification's "Object Container Files"), whole, in memory:
 * Iceberg's manifests and manifest lists are small (a manifest lists data files, not rows).
 *
 * The header's `avro.schema` is `JSON.stringify(schema)` of the schema exactly as given, attributes
 * and all: Iceberg binds manifest fields by their `field-id` attributes, and a writer that
 * re-serialises its parsed schema (avsc's BlockEncoder does) drops them, after which pyiceberg
 * refuses the file ("Cannot convert field, missing field-id").
 */
export function avroContainerFile(schema: AvroSchema, records: readonly AvroValue[], options: AvroContainerOptions = {}): Buffer {
  const codec = options.codec ?? 'deflate';
  const sync = options.sync ?? randomBytes(16);
  if (sync.length !== 16) throw new AvroEncodeError('sync', `a sync marker is 16 bytes, not ${sync.length}`);
  const blockRecords = options.blockRecords ?? 1_000;
  if (!(Number.isSafeInteger(blockRecords) && blockRecords > 0)) throw new AvroEncodeError('blockRecords', `${blockRecords} is not a positive count`);
  const encode = compileAvroSchema(schema);
  const reserved = Object.keys(options.metadata ?? {}).filter((key) => key.startsWith('avro.'));
  if (reserved.length > 0) throw new AvroEncodeError('metadata', `keys starting "avro." are the writer's own: ${reserved.join(', ')}`);

  const out = new AvroBytes();
  out.raw(MAGIC);
  const metadata: [string, string][] = [['avro.schema', JSON.stringify(schema)], ['avro.codec', codec], ...Object.entries(options.metadata ?? {})];
  // The metadata is a map<bytes>: one block of every entry, then the empty block.
  out.count(metadata.length);
  for (const [key, value] of metadata) {
    out.string(key);
    out.blob(Buffer.from(value, 'utf8'));
  }
  out.int(0);
  out.raw(sync);

  const block = new AvroBytes();
  for (let start = 0; start < records.length; start += blockRecords) {
    const batch = records.slice(start, start + blockRecords);
    batch.forEach((record, index) => encode(block, record, `record ${start + index}`));
    const raw = block.take();
    // deflate is raw DEFLATE (RFC 1951), no zlib header, as the specification says.
    const data = codec === 'deflate' ? deflateRawSync(raw) : raw;
    out.count(batch.length);
    out.count(data.length);
    out.raw(data);
    out.raw(sync);
  }
  return out.take();
}
