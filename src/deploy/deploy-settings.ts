/**
 * The fixed parts of the Kubernetes deployment: names the other manifests in k8s/ refer to, where
 * the image expects its files (see the Dockerfile), and the run limits with their reasons.
 */

export const APP = 'tilehouse';
export const CONTAINER = 'tilehouse';
export const SERVICE_ACCOUNT = 'tilehouse';
export const NAMESPACE = 'tilehouse';
/** kubectl create secret generic tilehouse-credentials --from-literal=client-id=… --from-file=client-secret=… */
export const CREDENTIALS_SECRET = 'tilehouse-credentials';
export const SECRET_KEYS = { clientId: 'client-id', clientSecret: 'client-secret' } as const;
export const JOBS_CONFIGMAP = 'tilehouse-jobs';
export const CONFIG_CONFIGMAP = 'tilehouse-config';
/** Rewritten to the registry image by `images:` in k8s/kustomization.yaml. */
export const DEFAULT_IMAGE = 'tilehouse';

/** The image's layout (Dockerfile): WORKDIR, the mount points of the ConfigMaps, the temp dir. */
export const IMAGE_PATHS = {
  workdir: '/app',
  configDirectory: '/etc/tilehouse/config',
  jobsDirectory: '/etc/tilehouse/jobs',
  tempDirectory: '/tmp',
} as const;

/** The non-root user of the image (Dockerfile `USER 10001`); runAsNonRoot needs it numeric. */
export const RUN_AS_USER = 10001;

export const CRONJOB_LIMITS = {
  // A run that could not start within 10 minutes of its time (controller down, no node free) is
  // skipped rather than started late; an incremental job's next run exports the days it missed, any
  // other job's next run exports its whole relative window again.
  // It also keeps the controller from giving up on a CronJob after 100 missed schedules.
  startingDeadlineSeconds: 600,
  // Exit 1 (the source or a sink failed after tilehouse's own retries) gets two more pods; exit 2
  // (bad config) fails at once through the podFailurePolicy.
  backoffLimit: 2,
  // One hour for all attempts together: far above an export of the benchmark's size, low enough
  // that a hung run is stopped before it overlaps many schedules (concurrencyPolicy: Forbid).
  activeDeadlineSeconds: 3600,
  successfulJobsHistoryLimit: 3,
  // Failed Jobs keep their pods (and logs) for whoever is on call.
  failedJobsHistoryLimit: 3,
  // Every Job template says when its Job goes: the history limits above usually remove a
  // scheduled Job first; this bounds a Job the CronJob no longer tracks (after a rename or a
  // suspend) to a week, long enough for whoever is on call to read a failed pod's logs.
  ttlSecondsAfterFinished: 7 * 24 * 3600,
} as const;

export const BACKFILL_LIMITS = {
  backoffLimit: 2,
  // An Indexed Job retries each index (a share of the windows) on its own: a pod whose windows
  // fail twice more gives up its index without costing the other indexes their retries.
  backoffLimitPerIndex: 2,
  // A backfill runs one export per window; months of daily windows take longer than one run.
  activeDeadlineSeconds: 6 * 3600,
  // A plain Job has no history limit; remove it (and its pods) a week after it finished.
  ttlSecondsAfterFinished: 7 * 24 * 3600,
} as const;

/** tilehouse's exit code for bad configuration or usage (src/cli/command.ts EXIT.usage). */
export const EXIT_BAD_CONFIG = 2;

export const RESOURCES = {
  requests: { cpu: '100m', memory: '208Mi' },
  limits: { memory: '352Mi' },
} as const;

export const RESOURCES_COMMENT = [
  " memory: from the benchmark's peak RSS under the image's node flags (npm run bench -- --memory,",
  ' Node 24.21): ~83 MB for a 5-row tile, ~126 MB at 100k rows, ~156 MB at 1M rows into CSV (50 ms',
  ' pages, concurrency 8; 153-170 MB over 13 runs), and ~183 MB for the same 1M rows into Parquet',
  " (175-191 MB over 13 runs: a row group's compressed pages wait until it is written). Every pod",
  ' gets the same resources whatever its sinks, so they follow the larger, Parquet. The request (208Mi,',
  ' 218 MB) is its 1M-row peak plus ~20%, what a cluster reserves for every run of every tile. The',
  ' limit (352Mi, 369 MB) is about twice that peak: what grows is pages in flight times page size',
  " (source.concurrency x itemsPerPage x row width), and the bench's pages are 1000 rows of 11",
  ' columns; much wider or longer pages, or a higher concurrency, need a higher limit. Rows stream',
  ' page by page (Parquet: row groups of 32 MiB of values), so memory does not grow with the tile',
  ' size. Re-measure and update these when the benchmark changes.',
  " NODE_OPTIONS raises V8's heap ceiling above the pod's limit on purpose: Node sizes it from the",
  " container's memory limit, and under ~2 GB V8 collects its old generation every few MB, which cost",
  ' ~30% more CPU per row in the benchmark (as did the earlier 160 MB cap; on Node 24.21 a ceiling of',
  ' 384 or 256 MB still cost 33-35%). The heap holds what is live (~17 MB) plus garbage up to a few',
  " times that, well inside the limit. It also caps V8's young generation (--max-semi-space-size=8):",
  " Node 24 lets it grow to 3 x 64 MB, which a run's garbage filled (~100 MB more peak RSS at 1M",
  ' rows, no CPU saved).',
  ' cpu: a request (100m) for scheduling, and deliberately no limit: a CFS quota throttles the',
  ' single-threaded process in bursts (JSON parsing of a page) even on an idle node, which only',
  ' stretches request timeouts and token lifetimes; the request already guarantees its share.',
].join('\n');

/**
 * Local disk of a pod (a job's `tempStorage` replaces it): the sizeLimit of each emptyDir (/tmp, a
 * local output directory) and the container's ephemeral-storage request and limit. What a run
 * writes there, per million rows of the bench's tile (11 columns, ~137 bytes a row on the wire;
 * bench/README.md, "Disk"): a BigQuery sink's NDJSON load file 287 MB (in /tmp), a local CSV
 * 143 MB, gzip CSV 21 MB, Parquet 38 MB (beside their target, an emptyDir in the pod); a gs:// file
 * sink nothing (it uploads from memory). 1Gi (GKE Autopilot's default) holds ~3.7M such rows into
 * BigQuery. Beyond the limit Kubernetes evicts the pod (SIGTERM: the run stops cleanly, exit 143,
 * nothing published); a node's disk that fills first fails the run with disk_full.
 */
export const DEFAULT_TEMP_STORAGE = '1Gi';

/**
 * The image's NODE_OPTIONS (Dockerfile ENV; the manifests set it too, so a pod runs with it even
 * where the image is replaced) and node's flags of its ENTRYPOINT, written once in
 * src/node-flags.ts with their reasons. test/deploy/dockerfile.test.ts holds the Dockerfile to them.
 */
export { NODE_ARGS, NODE_OPTIONS } from '../node-flags.js';

/** Kubernetes adds 11 characters to a CronJob's name for its Jobs; names are DNS labels of 63. */
export const MAX_CRONJOB_NAME = 52;
