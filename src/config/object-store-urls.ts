import type { TargetKind } from '../error-codes.js';
import { gcsUrls } from './gcs-url.js';
import { s3Urls } from './s3-url.js';

/**
 * The URL grammar of one object store: how a file sink's path or directory names it
 * (`gs://bucket/object`), checked here, in the configuration language, before anything runs. The
 * store itself is a folder of src/sinks/stores/, found by the same test (`looksLike`) through its
 * registry; config/ sits below sinks/ and cannot ask that registry, so the grammars are listed
 * here, one line per store.
 */
export interface ObjectStoreUrls {
  /** The store's name: its folder under src/sinks/stores/, and an error's `targetKind` (error-codes.ts names every one). */
  readonly name: Exclude<TargetKind, 'local' | 'bigquery' | 'postgres'>;
  /** How its URLs start, in lowercase (`gs://`). */
  readonly scheme: string;
  /** How a message names the store and its URLs: `Cloud Storage (gs://bucket/object)`. */
  readonly label: string;
  /** Whether a path or template names this store, or is a malformed attempt at its URL (`GS://x`, `gs:/x`). */
  looksLike(text: string): boolean;
  /** Why a bucket name is not one the store accepts, or undefined. */
  bucketNameProblem(name: string): string | undefined;
  /** Why a URL (an object's, or a prefix's when the object is optional) is malformed, in words a user can act on. */
  urlProblem(url: string, options: { object: 'required' | 'optional' }): string | undefined;
  /** `<scheme>bucket/rest` split without checks; undefined when it does not start with the scheme. */
  split(url: string): { bucket: string; rest: string } | undefined;
}

/** Every object store's grammar, one line each. */
export const objectStoreUrls: readonly ObjectStoreUrls[] = [gcsUrls, s3Urls];

// Any `scheme://`: a URL of a store tilehouse has not must be refused, not written as a local directory.
const ANY_URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** The grammar of the store a path, template or directory names; undefined for a local path (or a URL of no store: see `looksLikeUrl`). */
export function objectStoreUrlsOf(text: string): ObjectStoreUrls | undefined {
  return objectStoreUrls.find((urls) => urls.looksLike(text));
}

/** Whether a path or template is a URL of any scheme, or a malformed attempt at a store's. */
export function looksLikeUrl(text: string): boolean {
  return ANY_URL.test(text) || objectStoreUrlsOf(text) !== undefined;
}

/** The stores' URLs, for a message refusing another: `Cloud Storage (gs://bucket/object) and S3 (s3://bucket/key)`. */
export function supportedUrls(): string {
  const labels = objectStoreUrls.map((urls) => urls.label);
  return labels.length <= 1 ? labels.join('') : `${labels.slice(0, -1).join(', ')} and ${labels.at(-1)}`;
}
