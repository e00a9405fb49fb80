// src/sinks/iceberg/, module by module (ARCHITECTURE.md gives the folder one paragraph): the Iceberg
// sink, its catalogs loaded on demand (the JDBC catalog with pg) only when a job has one:
// `descriptor.ts` (this module: what the registry knows of it), `iceberg-names.ts` (the table's
// identifier, a new table's location, the OpenLineage dataset, the catalog's description: pure),
// `catalog-settings.ts` (`sinks.iceberg.catalog` opened: the REST token or OAuth2 client secret from
// `${ENV}` or a file, the JDBC catalog's connection resolved as sinks.postgres's), `iceberg-sink.ts` (`IcebergSink`: open,
// plan, `checkAccess`, status's publication, the guard's holding from the snapshot summaries; the
// writer: rows streamed into the data file, prepare = the manifest, publish = the one commit),
// `days-held.ts` (a `partition` run's guard: the rows of the days it replaces, from the manifests),
// `table-writer.ts` (`IcebergRun`, the run's files and its optimistic commit, exactly once by
// `tilehouse.run-id`; `writeIcebergRun`), `overwrite-run.ts` (`OverwriteRun`: partition and merge in
// the same phases, their files written as rows stream by, what the parent loses computed in the
// commit loop), `table-run.ts` (what both share: the files a run owns, the optimistic commit loop),
// `schema-contract.ts` (`schema: freeze | add`: the run's schema, new fields with fresh ids), `handoff-channel.ts` (a writer's batches handed to the files being written), `catalog.ts` (the seam both catalogs implement),
// `rest-catalog.ts`, `jdbc-catalog.ts`, `table-metadata.ts`, `manifests.ts` and `avro/` (the
// table format's files), `iceberg-schema.ts` (the type map), `local-files.ts` (where the files
// land), `column-metrics.ts` and `data-file-encoder.ts` (every data file's column bounds for its
// manifest entry), `merge-key-bounds.ts` (the files a merge leaves unread), `window-state.ts` (the windows the snapshots record), `workspace-checks.ts`,
// `iceberg-errors.ts`.

import { ConfigError } from '../../config/config-error.js';
import { keyedWindowsProblems } from '../../config/merge-key-options.js';
import { icebergSinkSchema } from '../../config/iceberg-sink-schema.js';
import { guardSettingsOf } from '../../config/publish-guard-schema.js';
import type { KindSecret, SinkKind } from '../sink-kind.js';
import { storeKindOf, storeOptionsFrom } from '../stores/registry.js';
import { warehouseUri } from './iceberg-names.js';
import { localPathOf } from './table-files.js';
import { icebergWindowStateReaders } from './window-state.js';
import { icebergWorkspaceChecker } from './workspace-checks.js';

/** Its keys in the credentials Secret (kubectl create secret generic tilehouse-credentials --from-file=iceberg-token=…). */
export const ICEBERG_SECRET_KEYS = {
  token: 'iceberg-token',
  clientSecret: 'iceberg-client-secret',
  password: 'iceberg-catalog-password',
  url: 'iceberg-catalog-url',
} as const;

/** The Iceberg sink, as the rest of tilehouse sees it. */
export const icebergSinkKind: SinkKind = {
  type: 'iceberg',
  label: 'Iceberg',
  configSchema: icebergSinkSchema,
  // Which table and which rows it keeps (mode, the days replaced, the key, new columns or not); not the guard.
  definitionSettings: { decides: ['type', 'table', 'writeMode', 'schema', 'partitionBy', 'primaryKey', 'latestBy'], decidesNot: ['guard'] },
  // Every open writer names its dataset by the table's location (IcebergWriter.lineageDataset); the
  // catalog's `namespace.table` alone cannot, so this is only what a writer that never opened leaves.
  lineage: { dataset: (target) => ({ namespace: 'iceberg', name: target }) },
  async build(config, index, job, environment, options) {
    if (config.type !== 'iceberg') throw new Error(`not an Iceberg sink: ${config.type}`);
    const settings = environment.sinks.iceberg;
    if (settings === undefined) {
      throw ConfigError.single({
        file: job.file,
        field: `sinks[${index}]`,
        message: 'an iceberg sink needs sinks.iceberg in the environment file (catalog, location)',
      });
    }
    // Loaded on demand: the catalogs (and pg, for the JDBC one) are only for runs that write Iceberg.
    const { IcebergSink } = await import('./iceberg-sink.js');
    return new IcebergSink({
      config,
      settings,
      environmentFile: 'the environment file',
      guard: guardSettingsOf(config.guard, settings.guard),
      googleCredentialsWaitMs: environment.googleCredentialsWaitMs,
      // A gs:// or s3:// location's files go through the stores as a file sink's do: sinks.gcs / sinks.s3, and a test's seams over them.
      stores: { ...storeOptionsFrom(environment), ...options },
    });
  },
  workspaceChecker: icebergWorkspaceChecker,
  windowStateReaders: (job, _sinks, environment, options, logger) =>
    icebergWindowStateReaders(job, environment, { ...storeOptionsFrom(environment), ...options }, logger),
  forWindows(sink, index, job) {
    return { sink, problems: sink.type === 'iceberg' ? keyedWindowsProblems(sink, index, job.file) : [] };
  },
  // Each window is one commit on the table's main: merges one at a time, so a key two windows hold ends with the later window's values.
  takesWindowsOneAtATime: (sink) => sink.type === 'iceberg' && sink.writeMode === 'merge',
  // What the store of the warehouse needs on the pods' service account (s3://: the IRSA role).
  serviceAccountAnnotations(sink, environment) {
    const settings = environment.sinks.iceberg;
    if (sink.type !== 'iceberg' || settings === undefined) return undefined;
    return storeKindOf(settings.location).serviceAccountAnnotations?.();
  },
  // A warehouse in a bucket needs no volume; a local one is an emptyDir in the pod, gone with it
  // while the catalog still names its files: warned about where the manifests are made.
  localFiles: {
    directory(sink, environment) {
      const settings = environment.sinks.iceberg;
      if (sink.type !== 'iceberg' || settings === undefined || !storeKindOf(settings.location).onThisMachine) return undefined;
      return localPathOf(warehouseUri(settings.location));
    },
    emptyDirWarning: (directory, jobNames) =>
      `${jobNames.join(', ')} write Iceberg tables under ${directory} (sinks.iceberg.location): in the pod that is an emptyDir, deleted with the pod, ` +
      'while the catalog keeps naming its files; set sinks.iceberg.location to gs://bucket/prefix or s3://bucket/prefix (or patch the volume to a PersistentVolumeClaim: k8s/README.md)',
  },
  // The snapshots' summaries are the ledger: every commit carries the run id and its window (what expiry has removed, --resume no longer sees).
  resumeRefusal: () => undefined,
  // The REST token or OAuth2 client secret, or the JDBC catalog's password (or url), from the credentials Secret: an env var, or a file in its mount.
  secrets(environment, jobs) {
    const settings = environment.sinks.iceberg;
    if (settings === undefined || !jobs.some((job) => job.sinks.some((sink) => sink.type === 'iceberg'))) return [];
    const { catalog } = settings;
    const field = (name: string) => `sinks.iceberg.catalog.${name}`;
    const secrets: KindSecret[] = [];
    if (catalog.type === 'rest') {
      // sigv4 and google take no secret of the file: the pod's identity (IRSA, Workload Identity).
      const auth = catalog.auth?.type === 'oauth2' ? catalog.auth : undefined;
      if (auth?.clientSecretFile !== undefined)
        secrets.push({ field: field('auth.clientSecretFile'), key: ICEBERG_SECRET_KEYS.clientSecret, file: auth.clientSecretFile });
      else if (auth?.clientSecret !== undefined)
        secrets.push({ field: field('auth.clientSecret'), key: ICEBERG_SECRET_KEYS.clientSecret, reference: auth.clientSecret });
      if (catalog.tokenFile !== undefined) secrets.push({ field: field('tokenFile'), key: ICEBERG_SECRET_KEYS.token, file: catalog.tokenFile });
      else if (catalog.token !== undefined) secrets.push({ field: field('token'), key: ICEBERG_SECRET_KEYS.token, reference: catalog.token });
      return secrets;
    }
    if (catalog.urlFile !== undefined) secrets.push({ field: field('urlFile'), key: ICEBERG_SECRET_KEYS.url, file: catalog.urlFile });
    else if (catalog.url !== undefined) secrets.push({ field: field('url'), key: ICEBERG_SECRET_KEYS.url, reference: catalog.url });
    if (catalog.passwordFile !== undefined) secrets.push({ field: field('passwordFile'), key: ICEBERG_SECRET_KEYS.password, file: catalog.passwordFile });
    else if (catalog.password !== undefined) secrets.push({ field: field('password'), key: ICEBERG_SECRET_KEYS.password, reference: catalog.password });
    return secrets;
  },
};
