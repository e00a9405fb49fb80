import path from 'node:path';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import { redactText } from '../../redaction.js';
import { gcsStoreKind } from './gcs/index.js';
import { localStoreKind } from './local/index.js';
import type { ObjectStoreKind, StoreOptions, StoreSeams, StoredDocuments } from './object-store.js';
import { s3StoreKind } from './s3/index.js';

export type { ObjectStore, ObjectStoreKind, StoreOptions, StoreSeams, StoredDocuments, VendedStorage } from './object-store.js';

/**
 * Every store, one line each: a new store is its folder, its URL grammar in the configuration
 * (config/object-store-urls.ts) and a line here. Asked in this order; the local store, last,
 * claims every location no other does.
 */
const storeKinds: readonly ObjectStoreKind[] = [gcsStoreKind, s3StoreKind, localStoreKind];

/** The store a path, template or directory names. */
export function storeKindOf(location: string): ObjectStoreKind {
  return storeKinds.find((kind) => kind.claims(location)) ?? localStoreKind;
}

/** What every store takes from the environment file, for a sink that may write to any of them. */
export function storeOptionsFrom(environment: EnvironmentConfig): StoreOptions {
  return Object.assign({}, ...storeKinds.map((kind) => kind.optionsFrom(environment))) as StoreOptions;
}

/**
 * The documents below `location` (a local directory, gs:// or s3:// prefix), in the store that
 * claims it, loaded with the environment's settings for it and any seams: for the run history
 * (src/history/), which asks this instead of a URL's scheme. A relative directory on this machine
 * is taken from `baseDirectory` (the environment file's), not from wherever the command was started.
 */
export async function documentsAt(
  location: string,
  environment: EnvironmentConfig,
  options: { baseDirectory: string; seams?: StoreSeams },
): Promise<StoredDocuments> {
  const kind = storeKindOf(location);
  const store = await kind.load({ ...kind.optionsFrom(environment), ...options.seams });
  const documents = store.documents(kind.onThisMachine ? path.resolve(options.baseDirectory, location) : location);
  // Every store's documents (the run history) are redacted as they are put, whatever the store:
  // they are read back by another process that never registered the secret (src/redaction.ts).
  return { ...documents, put: (name, text) => documents.put(name, redactText(text)) };
}
