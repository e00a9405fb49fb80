import type { Transform } from 'node:stream';
import type { Logger } from 'pino';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { ObjectStoreUrls } from '../../config/object-store-urls.js';
import type { TargetKind } from '../../error-codes.js';
import type { RetryBudget } from '../../retry.js';
import type { Column } from '../../transform/column.js';
import type { Leftover, SinkWriter } from '../sink.js';
import type { LineageDatasetName } from '../lineage-dataset-name.js';
import type { HeldWindow, WindowHoldings } from '../window-state.js';
import type { FileEncoder, FormatNames, StoredFile } from './file-bytes.js';
import type { ManifestRun } from './manifest.js';

/**
 * Where a file sink's files land, behind one interface: a local directory, a Cloud Storage or an
 * S3 bucket. Each store is a folder beside this file (local/, gcs/, s3/) whose `index.ts` gives
 * its `ObjectStoreKind`, listed in registry.ts; the file sink (../files/) asks the registry for
 * the store of its target's location, once, and then asks that store, never the URL's scheme.
 * Modelled on Kysely's dialects: the tests run one body against every store
 * (test/support/object-stores.ts) as the code asks one interface of each.
 *
 * What the stores share lies beside this file: `stream-writer.ts` (a run's one encoder, the
 * write/drain loop with `drained.ts`, the prepare/publish/abort state machine every writer
 * extends), `object-stream-writer.ts` (what the bucket stores' writers add: the stored bytes counted
 * and hashed on their way to the temp object, the manifest built from them, the publish's result),
 * `manifest.ts` (the optional `<file>.manifest.json`, put in place right after the file),
 * `window-open.ts` (whether a published window was open; `objectWindowsHeld`, a bucket's windows
 * judged by manifest, run id and size), `file-names.ts` (a run's temp names, by the house's one
 * scheme in src/write-file-atomically.ts, and file-name-safe text), `store-errors.ts` (one code per
 * failure whatever the store, the store as `targetKind`), `file-bytes.ts` (what a format hands a
 * store: an encoder's chunks, a stored file to read back). Beside a target's files, each store keeps
 * small documents whole (`documents`: the run history's records, src/history/; `local/local-documents.ts`,
 * `gcs/gcs-documents.ts`, `s3/s3-documents.ts`), and writes a table format's files (`tableFiles`: each
 * new, visible only whole; listed with their times for housekeeping, S3's unfinished uploads ended; `local/local-table-files.ts`, `gcs/gcs-table-files.ts`, `s3/s3-table-files.ts`). A new store is a folder here, its URL
 * grammar in config/object-store-urls.ts, its name in error-codes.ts's TARGET_KINDS, and one line
 * in registry.ts.
 */

/**
 * What tests and the bench may hand the stores in place of production's defaults (a client on an
 * emulator, short retries). Empty here: each store adds its own fields from its folder's
 * `index.ts` (`declare module '../object-store.js'`), so that neither this contract nor the sink
 * contract (sink-kind.ts) names a store's client types, and a new store adds its seams where it lives.
 */
export interface StoreSeams {}

/**
 * What a store is loaded with: the seams, the run's stop deadline, and each store's settings from
 * the environment file (`optionsFrom`; added by its `index.ts` as the seams are).
 */
export interface StoreOptions extends StoreSeams {
  /** The environment's `stopDeadlineMs`: publish and cleanup requests end this long after a stop. */
  stopDeadlineMs?: number;
  /**
   * The credentials a table's catalog vended for its files (Iceberg REST's access delegation), by
   * location: a table's file below a vended prefix is written, read, listed and removed with them
   * (`tableFiles`), every other call with the store's own. Undefined for a location: the store's own.
   */
  vendedCredentials?: (location: string) => VendedStorage | undefined;
}

/**
 * Storage credentials a catalog vended for the files below `prefix`, as Iceberg's FileIO properties
 * (`s3.access-key-id`, `s3.secret-access-key`, `s3.session-token`, …): each store reads the ones it
 * takes. `current()` answers them renewed when they are due (a failed renewal throws its coded error).
 */
export interface VendedStorage {
  readonly prefix: string;
  current(): Promise<Readonly<Record<string, string>>>;
}

/** What tilehouse knows of a store without loading it (and its client library). */
export interface ObjectStoreKind {
  /** The store's name: its folder, and the `targetKind` of failures at its targets. */
  readonly name: Exclude<TargetKind, 'bigquery' | 'postgres'>;
  /**
   * Whether a path, template or directory names this store (a malformed attempt at its URL
   * included, which the configuration refuses). The registry asks the stores in turn; the local
   * store, last, claims what no other does.
   */
  claims(location: string): boolean;
  /**
   * Whether its files lie on this machine's file system: the workspace checks look at their
   * directories, and on Kubernetes the pod needs a volume for them.
   */
  readonly onThisMachine: boolean;
  /** The publish rank of a file sink writing here (Sink.publishRank: the likelier a publish is to fail, the earlier). */
  readonly publishRank: number;
  /** What it takes from the environment file (`sinks.<store>`), for `load`. */
  optionsFrom(environment: EnvironmentConfig): StoreOptions;
  /** The OpenLineage dataset a target here is, as the spec's naming page names it (no client loaded). */
  lineageDataset(location: string): LineageDatasetName;
  /** The annotations its targets need on the pods' service account (`tilehouse k8s`); absent: none. */
  serviceAccountAnnotations?(): Record<string, string>;
  /** The store, its client made from `options` (or the one a seam injects); its modules are loaded here, on first use. */
  load(options: StoreOptions): Promise<ObjectStore>;
}

/** What a file sink asks of a store, loaded. Locations are paths or URLs the store claims. */
export interface ObjectStore {
  /**
   * One run's writer to `target`: the encoded bytes stream to a temp beside it and become the
   * target on publish, whole, or not at all (abort, or any failure before publish, leaves the
   * target as it was). Checks what can be checked before a row is fetched.
   */
  openWriter(options: StoreWriterOptions): Promise<SinkWriter>;
  /** The file at `location` as stored now; undefined when there is none. */
  storedFile(location: string): Promise<StoredFile | undefined>;
  /** Removes the temp artefacts of dead runs below `root` (the sweep scope of a template) and names them. */
  sweep(root: string, options: { recursive: boolean; logger: Logger }): Promise<string[]>;
  /** What a sweep of `root` would remove (now, or once old enough), each with how it goes away; reads only (`status`). */
  strays(root: string, options: { recursive: boolean; logger: Logger }): Promise<Leftover[]>;
  /**
   * Whether a run could write below `root`, found without writing; throws the failure a run
   * would meet. Returns a note for `check` (who the run would write as), if there is one.
   */
  checkAccess(root: string, context: { jobName: string; format: FormatNames; logger: Logger }): Promise<string | undefined>;
  /**
   * Which of `windows` (the target of each being `targets[i]`) the store holds, whole and
   * published: the manifest beside each window's file describes that file. Absent is "not held";
   * any other failure to read throws WindowStateUnreadableError, never a guess.
   */
  heldWindows(
    windows: readonly HeldWindow[],
    targets: readonly string[],
    context: { jobName: string; template: string; timezone: string },
  ): Promise<WindowHoldings>;
  /** Small documents kept below `root` (the run history's records, src/history/), not a target's data. */
  documents(root: string): StoredDocuments;
  /** Files a table format names once each (Iceberg's data files, manifests, metadata), by location. */
  readonly tableFiles: TableFiles;
}

/**
 * Files written once under a fresh name and never replaced (a table format's data files, manifests
 * and metadata: a table's commit is what makes them part of it, not their names). Locations are
 * paths or URLs the store claims.
 */
export interface TableFiles {
  /**
   * Streams `pieces` to a new file at `location` and answers its size in bytes. Readers see the file
   * only once it is whole (a local temp file linked into place, an S3 multipart upload completed,
   * a Cloud Storage resumable upload finalized); on any failure nothing stays at `location` (an
   * unfinished upload is aborted). A file already at `location` is refused, never replaced.
   */
  writeNew(location: string, pieces: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<number>;
  /** The whole file; a missing one throws (a table's file that is gone is an error, never "empty"). */
  read(location: string): Promise<Buffer>;
  /** Removes the file; none is not an error. */
  remove(location: string): Promise<void>;
  /**
   * Every file below the folder `location` (at any depth), each as its location in the store's
   * spelling (a local path, `gs://bucket/object`, `s3://bucket/key`) with when it was last written,
   * on the store's clock; none when nothing is there. A bucket's listing is read page by page
   * (its write settings' `listPageSize`, else the service's 1000) to the last.
   */
  list(location: string): Promise<ListedTableFile[]>;
  /**
   * Ends the unfinished uploads below the folder `location` begun at or before `startedAtMs` (the
   * store's clock) and names them: S3's multipart uploads, whose parts are kept, and billed, until
   * aborted. Stores whose unfinished writes are files (local temp files, which `list` shows) or
   * expire by themselves (Cloud Storage's resumable sessions, after a week) end none.
   */
  abortUnfinished(location: string, startedAtMs: number): Promise<string[]>;
}

/** A table format's file as a listing shows it. */
export interface ListedTableFile {
  /** A local path, `gs://bucket/object`, `s3://bucket/key`. */
  location: string;
  /** When it was last written, on the store's clock (a bucket's: its server's). */
  modifiedMs: number;
}

/**
 * Small text documents below one root, each written whole in one step (a local temp file renamed,
 * one bucket upload) so that a reader sees the old document or the new one, never a part; each
 * writer writes its own names, so concurrent writers never lose each other's documents. Names are
 * `folder/name` (one level: the history keeps a folder per job).
 */
export interface StoredDocuments {
  put(name: string, text: string): Promise<void>;
  /** The names directly in `folder`, any order; none when the folder does not exist. */
  list(folder: string): Promise<string[]>;
  /** The document's text; undefined when there is none (removed since it was listed). */
  get(name: string): Promise<string | undefined>;
  /** Removes the document; none is not an error. */
  remove(name: string): Promise<void>;
}

/** What a run's writer is given, whatever the store. */
export interface StoreWriterOptions {
  format: FormatNames;
  /** The run's encoder (the format's). */
  encoder: FileEncoder;
  /** Makes what the encoded bytes pass through before the store (the format's wrapper: gzip), if anything. */
  wrap?: () => Transform | undefined;
  /** The format's `content-type`, for a store that keeps one. */
  contentType: string;
  jobName: string;
  /** The path or URL readers see. */
  target: string;
  runId: string;
  /** For the manifest. */
  columns: readonly Column[];
  /** Whether the stored bytes are gzip (the manifest's and the summary's `gzip`). */
  gzip: boolean;
  logger: Logger;
  /** The run's stop: aborts what is in flight. */
  signal?: AbortSignal;
  /** Publish `<target>.manifest.json` right after the file (see manifest.ts). */
  manifest?: ManifestRun;
  /** The tile run's retry budget, which a store's retries draw on unless its seams bring their own. */
  retryBudget?: RetryBudget;
}

/**
 * A bucket store's object as an OpenLineage dataset, as the spec's naming page has it:
 * `<scheme>bucket` the namespace, the object's key the name.
 */
export function bucketObjectDataset(urls: ObjectStoreUrls, location: string): LineageDatasetName {
  const { bucket, rest } = urls.split(location) ?? { bucket: '', rest: location };
  return { namespace: `${urls.scheme}${bucket}`, name: rest };
}
