import { TilehouseError } from '../../../errors.js';

/**
 * A value that does not fit its Avro schema, or a schema the writer does not know. The Iceberg
 * metadata writer builds both from its own types, so this is a bug guard (`internal_error`),
 * raised before a byte of the file is handed on.
 */
export class AvroEncodeError extends TilehouseError {
  readonly code = 'internal_error';

  constructor(
    readonly path: string,
    reason: string,
  ) {
    super(`Avro: ${path}: ${reason}`);
  }
}
