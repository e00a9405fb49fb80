import path from 'node:path';
import type { LineageDatasetName } from '../sink-kind.js';

const OBJECT_URL = /^([a-z][a-z0-9+.-]*:\/\/[^/]+)\/(.+)$/;

/**
 * The OpenLineage dataset of a file target, as the spec's naming page has it: an object is
 * `<scheme>://<bucket>` / its key (`gs://`, `s3://`), a local file `file` / its absolute path.
 * Read from the URL's shape rather than per store, so it holds for every store; it belongs in the
 * store interface (local, gs://, s3://) once file targets have one.
 */
export function fileLineageDataset(target: string): LineageDatasetName {
  const object = OBJECT_URL.exec(target);
  if (object !== null) return { namespace: object[1] as string, name: object[2] as string };
  return { namespace: 'file', name: path.resolve(target) };
}
