import type { EnvironmentConfig } from '../../config/environment-schema.js';
import { gcsStoreKind } from './gcs/index.js';
import { localStoreKind } from './local/index.js';
import type { ObjectStoreKind, StoreOptions } from './object-store.js';
import { s3StoreKind } from './s3/index.js';

export type { ObjectStore, ObjectStoreKind, StoreOptions, StoreSeams } from './object-store.js';

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
