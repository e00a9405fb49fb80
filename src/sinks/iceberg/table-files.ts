import { AsyncLocalStorage } from 'node:async_hooks';
import { fileURLToPath } from 'node:url';
import { isTilehouseError } from '../../errors.js';
import { fileSystemFailureCode } from '../file-system-failure.js';
import type { ListedTableFile } from '../stores/object-store.js';
import { type ObjectStore, type StoreOptions, storeKindOf } from '../stores/registry.js';
import { IcebergFileWriteError } from './iceberg-errors.js';

/**
 * Where a table's files are, through the stores' seam (src/sinks/stores/): a location is a `file:`
 * URI or an absolute path (the local store), `gs://bucket/…` (Cloud Storage) or `s3://bucket/…`
 * (S3), and the store that claims it writes, reads and removes it (`ObjectStore.tableFiles`). A file's
 * location is the table's plus a relative path, kept in the table's own spelling (the REST server
 * answers `file:/…`, one slash; pyiceberg and Java write `file:///…`; S3 is `s3://`, never `s3a://`)
 * so every reader resolves it alike.
 *
 * Each file is new (a fresh name) and is visible only once whole; a failed write leaves nothing.
 * The stores are loaded with the options of the innermost `withTableFileStores` around the call (the
 * environment's `sinks.s3`/`sinks.gcs` settings, a test's clients), else with an explicit `stores`
 * argument, else with the defaults (the AWS credential chain, Application Default Credentials or
 * STORAGE_EMULATOR_HOST), each store loaded once per options object.
 */
const scoped = new AsyncLocalStorage<StoreOptions>();
const DEFAULT_OPTIONS: StoreOptions = {};
const loaded = new WeakMap<StoreOptions, Map<string, Promise<ObjectStore>>>();

/** Runs `body` with the table files' stores loaded from `options` (every location function called within it, however deep). */
export function withTableFileStores<T>(options: StoreOptions, body: () => Promise<T>): Promise<T> {
  return scoped.run(options, body);
}

/** A `file:` URI or absolute path as the path on this machine. */
export function localPathOf(location: string): string {
  if (location.startsWith('/')) return location;
  if (!location.startsWith('file:')) throw new Error(`${location}: not a file: location`);
  return fileURLToPath(new URL(location));
}

/** Whether `location` is on this machine (a path or `file:` URI) rather than in a bucket. */
export function isLocalLocation(location: string): boolean {
  return storeKindOf(location).onThisMachine;
}

/**
 * One spelling per file, to compare locations by: a local one as its path, a bucket's as is, but
 * Hadoop's `s3a://` and `s3n://` as `s3://` (a table Spark wrote names its files so; housekeeping
 * must see them as the same objects it lists, or it would take them for orphans).
 */
export function fileKeyOf(location: string): string {
  const bucketed = location.replace(/^s3[an]:\/\//, 's3://');
  return isLocalLocation(bucketed) ? localPathOf(bucketed) : bucketed;
}

export function childLocation(location: string, relative: string): string {
  return `${location.replace(/\/+$/, '')}/${relative}`;
}

/** Streams `pieces` to a new file at `location` (visible only whole; nothing left on failure; an existing file refused) and answers its size. */
export async function writeNewFile(location: string, pieces: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, stores?: StoreOptions): Promise<number> {
  const { files, path } = await filesAt(location, stores);
  try {
    return await files.writeNew(path, pieces);
  } catch (error) {
    // The stores' own failures are coded already; a full disk or a refused folder is coded here (an existing file stays EEXIST for its callers).
    if (isTilehouseError(error) || fileSystemFailureCode(error, 'write_failed') === 'write_failed') throw error;
    throw new IcebergFileWriteError(location, error);
  }
}

/** The whole file at `location`; a missing file throws. */
export async function readLocation(location: string, stores?: StoreOptions): Promise<Buffer> {
  const { files, path } = await filesAt(location, stores);
  return files.read(path);
}

/** Removes the file at `location`; none is not an error. */
export async function removeLocation(location: string, stores?: StoreOptions): Promise<void> {
  const { files, path } = await filesAt(location, stores);
  await files.remove(path);
}

/**
 * Every file below the folder `location`, each with when it was last written on its store's clock
 * (a local file as its path, a bucket's as its URL: `fileKeyOf`'s spelling); none when nothing is there.
 */
export async function listLocation(location: string, stores?: StoreOptions): Promise<ListedTableFile[]> {
  const { files, path } = await filesAt(location, stores);
  return files.list(path);
}

/** Ends the unfinished uploads below the folder `location` begun at or before `startedAtMs` (S3's multipart uploads) and names them. */
export async function abortUnfinishedUploads(location: string, startedAtMs: number, stores?: StoreOptions): Promise<string[]> {
  const { files, path } = await filesAt(location, stores);
  return files.abortUnfinished(path, startedAtMs);
}

async function filesAt(location: string, stores: StoreOptions | undefined): Promise<{ files: ObjectStore['tableFiles']; path: string }> {
  const kind = storeKindOf(location);
  const options = stores ?? scoped.getStore() ?? DEFAULT_OPTIONS;
  let byKind = loaded.get(options);
  if (!byKind) {
    byKind = new Map();
    loaded.set(options, byKind);
  }
  let store = byKind.get(kind.name);
  if (!store) {
    store = kind.load(options);
    byKind.set(kind.name, store);
    // A store that failed to load (no credentials yet) is tried again by the next call.
    store.catch(() => byKind.delete(kind.name));
  }
  return { files: (await store).tableFiles, path: kind.onThisMachine ? localPathOf(location) : location };
}
