/**
 * The Avro schemas the Iceberg metadata writer uses, as JSON values: what the file's header holds,
 * exactly as given. Extra attributes (Iceberg's `field-id`, `element-id`, `key-id`, `value-id`,
 * `logicalType`) ride along untouched: readers such as pyiceberg bind manifest fields by them.
 */
export type AvroPrimitive = 'null' | 'boolean' | 'int' | 'long' | 'float' | 'double' | 'bytes' | 'string';

export interface AvroRecordField {
  name: string;
  type: AvroSchema;
  doc?: string;
  default?: unknown;
  [attribute: string]: unknown;
}

export interface AvroRecord {
  type: 'record';
  name: string;
  fields: readonly AvroRecordField[];
  [attribute: string]: unknown;
}

export interface AvroArray {
  type: 'array';
  items: AvroSchema;
  [attribute: string]: unknown;
}

export interface AvroMap {
  type: 'map';
  values: AvroSchema;
  [attribute: string]: unknown;
}

export interface AvroFixed {
  type: 'fixed';
  name: string;
  size: number;
  [attribute: string]: unknown;
}

/** A primitive written as an object, to carry a logical type (`{ type: 'int', logicalType: 'date' }`). */
export interface AvroAnnotated {
  type: AvroPrimitive;
  [attribute: string]: unknown;
}

export type AvroSchema = AvroPrimitive | AvroRecord | AvroArray | AvroMap | AvroFixed | AvroAnnotated | readonly AvroSchema[];
