import path from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { ENV_REFERENCE, type EnvironmentConfig, type SourceConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { type KindSecret, sinkKindOf, sinkKinds, type SinkKind } from '../sinks/registry.js';
import { storeKindOf } from '../sinks/registry.js';
import {
  CONFIG_CONFIGMAP,
  CONTAINER,
  CREDENTIALS_SECRET,
  DEFAULT_TEMP_STORAGE,
  IMAGE_PATHS,
  JOBS_CONFIGMAP,
  NODE_OPTIONS,
  RESOURCES,
  RUN_AS_USER,
  SECRET_KEYS,
  SERVICE_ACCOUNT,
} from './deploy-settings.js';

/**
 * The pod every tilehouse run gets, CronJob or backfill: the same image, mounts, credentials,
 * limits and lock-down. Derived from the environment config so the pod supplies exactly what the
 * config refers to (the secret file it reads, the variable it expands, the directories it writes).
 */

type Manifest = Record<string, unknown>;

export interface PodInputs {
  environment: EnvironmentConfig;
  /** The environment config file; its base name is the key in the config ConfigMap. */
  configFile: string;
  jobs: readonly LoadedJob[];
  image: string;
}

export interface PodPlan {
  /**
   * The pod template's `spec` for a container running `args` (with `env` added to the container's),
   * with `tempStorage` of local disk (a job's own, else DEFAULT_TEMP_STORAGE).
   */
  spec(args: string[], env?: readonly Manifest[], tempStorage?: string): Manifest;
  /** Things that work but deserve a look (CSV written into a pod's emptyDir). */
  warnings: string[];
}

interface Credentials {
  env: Manifest[];
  mountPath?: string;
  items: Array<{ key: string; path: string }>;
}

/** Wires the Secret's keys to the config's credential fields: `${VAR}` → env, `…File` → a file mount. */
function credentialWiring(source: SourceConfig, configFile: string, sinkSecrets: readonly KindSecret[] = []): Credentials {
  const wiring: Credentials = { env: [], items: [] };
  const mountFile = (field: string, file: string, key: string) => {
    const located = field.includes('.') ? field : `source.${field}`;
    if (!path.posix.isAbsolute(file)) {
      throw ConfigError.single({
        file: configFile,
        field: located,
        value: JSON.stringify(file),
        message: 'must be an absolute path in the pod (the Secret is mounted there)',
      });
    }
    const directory = path.posix.dirname(file);
    if (wiring.mountPath !== undefined && wiring.mountPath !== directory) {
      throw ConfigError.single({
        file: configFile,
        field: located,
        value: JSON.stringify(file),
        message: `must be in the same directory as the other secret file (${wiring.mountPath}): the Secret is one mount`,
      });
    }
    wiring.mountPath = directory;
    wiring.items.push({ key, path: path.posix.basename(file) });
  };
  const fromEnv = (reference: string, key: string) => {
    const match = ENV_REFERENCE.exec(reference);
    if (match === null) return; // a literal client id needs nothing from the Secret
    wiring.env.push({ name: match[1], valueFrom: { secretKeyRef: { name: CREDENTIALS_SECRET, key } } });
  };
  if (source.clientIdFile !== undefined) mountFile('clientIdFile', source.clientIdFile, SECRET_KEYS.clientId);
  else if (source.clientId !== undefined) fromEnv(source.clientId, SECRET_KEYS.clientId);
  if (source.clientSecretFile !== undefined) mountFile('clientSecretFile', source.clientSecretFile, SECRET_KEYS.clientSecret);
  else if (source.clientSecret !== undefined) fromEnv(source.clientSecret, SECRET_KEYS.clientSecret);
  // The sinks' own secrets (a PostgreSQL password), each kind saying which, from the same Secret.
  for (const secret of sinkSecrets) {
    if (secret.file !== undefined) mountFile(secret.field, secret.file, secret.key);
    else if (secret.reference !== undefined) fromEnv(secret.reference, secret.key);
  }
  return wiring;
}

function isWithin(directory: string, parent: string): boolean {
  const relative = path.posix.relative(parent, directory);
  return relative === '' || (!relative.startsWith('..') && !path.posix.isAbsolute(relative));
}

/**
 * Where runs write besides /tmp: the local directories sinks write below (each kind's
 * `localFiles`: a local CSV target's directory; a table or a bucket's object needs none), and a
 * temp directory outside /tmp.
 */
function writableDirectories(
  environment: EnvironmentConfig,
  jobs: readonly LoadedJob[],
): { directories: string[]; localJobs: Map<SinkKind, Map<string, string[]>> } {
  const localJobs = new Map<SinkKind, Map<string, string[]>>();
  for (const job of jobs) {
    for (const sink of job.sinks) {
      const kind = sinkKindOf(sink);
      const directory = kind.localFiles?.directory(sink, environment, IMAGE_PATHS.workdir);
      if (directory === undefined) continue;
      const byDirectory = localJobs.get(kind) ?? new Map<string, string[]>();
      localJobs.set(kind, byDirectory.set(directory, [...(byDirectory.get(directory) ?? []), job.name]));
    }
  }
  const wanted = [...localJobs.values()].flatMap((byDirectory) => [...byDirectory.keys()]);
  if (environment.tempDirectory !== undefined) wanted.push(path.posix.resolve(IMAGE_PATHS.workdir, environment.tempDirectory));
  // Nested directories share their parent's volume; /tmp is always writable.
  const directories: string[] = [];
  for (const directory of [...new Set(wanted)].sort((a, b) => a.length - b.length || a.localeCompare(b))) {
    if ([IMAGE_PATHS.tempDirectory, ...directories].some((parent) => isWithin(directory, parent))) continue;
    directories.push(directory);
  }
  return { directories, localJobs };
}

/** The pod's grace period for a stop deadline: Kubernetes' default 30 s, or the deadline plus 5 s. */
export function graceSeconds(stopDeadlineMs: number | undefined): number {
  return Math.max(30, Math.ceil((stopDeadlineMs ?? 0) / 1000) + 5);
}

/** A warning per local directory a sink writes below, kind by kind: in the pod it is an emptyDir, gone with the pod. */
function emptyDirWarnings(localJobs: Map<SinkKind, Map<string, string[]>>): string[] {
  return sinkKinds.flatMap((kind) => [...(localJobs.get(kind) ?? [])].map(([directory, names]) => kind.localFiles!.emptyDirWarning(directory, names)));
}

/**
 * A local `history.location` keeps nothing in a pod: relative, it lies beside the environment file
 * on the read-only ConfigMap mount; absolute, on the read-only root file system, or in an emptyDir
 * (/tmp, an output directory) gone with the pod. Each run would log `history_unavailable` (or write
 * records nobody reads) and `status` would have no night to show, so say it where the manifests are
 * made, with the setting to change. A volume mounted there by one's own overlay is the exception the
 * warning names.
 */
function historyWarnings(environment: EnvironmentConfig, configFile: string, directories: readonly string[]): string[] {
  const { location } = environment.history;
  if (!storeKindOf(location).onThisMachine) return [];
  const inPod = path.posix.resolve(IMAGE_PATHS.configDirectory, location);
  const where = [IMAGE_PATHS.configDirectory, IMAGE_PATHS.jobsDirectory].some((mount) => isWithin(inPod, mount))
    ? 'on the read-only ConfigMap mount: every run logs history_unavailable and keeps no record'
    : [IMAGE_PATHS.tempDirectory, ...directories].some((mount) => isWithin(inPod, mount))
      ? 'in an emptyDir, gone with the pod: no later run or status reads the records'
      : "on the container's read-only root file system: every run logs history_unavailable and keeps no record";
  return [
    `history.location in ${path.basename(configFile)} is the local directory ${location}, in the pod ${inPod}, ${where}; ` +
      'set history.location to gs://bucket/prefix or s3://bucket/prefix (or mount a persistent volume there in your own overlay)',
  ];
}

/** The pod's volumes and the container's mounts: /tmp, the two ConfigMaps, the output directories, the secret files. */
function podVolumes(directories: string[], credentials: Credentials, configFile: string): { mounts: Manifest[]; volumes: Manifest[] } {
  const mounts: Manifest[] = [
    { name: 'tmp', mountPath: IMAGE_PATHS.tempDirectory },
    { name: 'config', mountPath: IMAGE_PATHS.configDirectory, readOnly: true },
    { name: 'jobs', mountPath: IMAGE_PATHS.jobsDirectory, readOnly: true },
  ];
  const volumes: Manifest[] = [
    // readOnlyRootFilesystem: temp files (NDJSON for BigQuery, CSV before its rename) go here.
    { name: 'tmp', emptyDir: {} },
    { name: 'config', configMap: { name: CONFIG_CONFIGMAP } },
    { name: 'jobs', configMap: { name: JOBS_CONFIGMAP } },
  ];
  directories.forEach((directory, index) => {
    const name = index === 0 ? 'output' : `output-${index + 1}`;
    mounts.push({ name, mountPath: directory });
    volumes.push({ name, emptyDir: {} });
  });
  if (credentials.mountPath !== undefined) {
    mounts.push({ name: 'credentials', mountPath: credentials.mountPath, readOnly: true });
    // 0440 and fsGroup: the files belong to root, readable by the run's group only.
    volumes.push({ name: 'credentials', secret: { secretName: CREDENTIALS_SECRET, items: credentials.items, defaultMode: 0o440 } });
  }
  const paths = mounts.map((mount) => mount.mountPath as string);
  const clash = paths.find((mountPath, index) => paths.indexOf(mountPath) !== index);
  if (clash !== undefined) {
    throw ConfigError.single({
      file: configFile,
      field: '',
      value: JSON.stringify(clash),
      message: 'two volumes would be mounted at this path; move the secret files, CSV or temp directory apart',
    });
  }
  return { mounts, volumes };
}

/** Every emptyDir bounded to the pod's local disk (/tmp, output directories). */
function sizedVolumes(volumes: readonly Manifest[], sizeLimit: string): Manifest[] {
  return volumes.map((volume) => (volume.emptyDir === undefined ? volume : { ...volume, emptyDir: { sizeLimit } }));
}

/** Memory and CPU (RESOURCES), and the local disk as ephemeral-storage, request and limit alike. */
function podResources(tempStorage: string): Manifest {
  return {
    requests: { ...RESOURCES.requests, 'ephemeral-storage': tempStorage },
    limits: { ...RESOURCES.limits, 'ephemeral-storage': tempStorage },
  };
}

export function planPod(inputs: PodInputs): PodPlan {
  const { environment, configFile, jobs } = inputs;
  const credentials = credentialWiring(
    environment.source,
    configFile,
    sinkKinds.flatMap((kind) => kind.secrets(environment, jobs)),
  );
  const { directories, localJobs } = writableDirectories(environment, jobs);
  const warnings = [...emptyDirWarnings(localJobs), ...historyWarnings(environment, configFile, directories)];
  const { mounts, volumes } = podVolumes(directories, credentials, configFile);

  const env: Manifest[] = [
    { name: 'TILEHOUSE_CONFIG', value: path.posix.join(IMAGE_PATHS.configDirectory, path.basename(configFile)) },
    { name: 'TILEHOUSE_JOBS', value: IMAGE_PATHS.jobsDirectory },
    { name: 'NODE_OPTIONS', value: NODE_OPTIONS },
    ...credentials.env,
    // The pod's Kubernetes resource attributes for OpenTelemetry (k8s.pod.name, ...), through the
    // downward API; read only when telemetry is on (src/telemetry/otel-telemetry.ts).
    { name: 'K8S_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'K8S_POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
    { name: 'K8S_NAMESPACE_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: 'K8S_NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
  ];
  const seccompProfile = { type: 'RuntimeDefault' };

  return {
    warnings,
    spec: (args, extraEnv = [], tempStorage = DEFAULT_TEMP_STORAGE) => ({
      serviceAccountName: SERVICE_ACCOUNT,
      // podFailurePolicy requires Never: a failed container makes a new pod, counted by backoffLimit.
      restartPolicy: 'Never',
      // tilehouse stops cleanly on SIGTERM (aborts requests, removes temp files, exit 143) within
      // stopDeadlineMs; the grace period is Kubernetes' default 30 s, or that plus 5 s when longer,
      // so SIGKILL never comes before the summary.
      terminationGracePeriodSeconds: graceSeconds(environment.stopDeadlineMs),
      securityContext: {
        runAsNonRoot: true,
        runAsUser: RUN_AS_USER,
        runAsGroup: RUN_AS_USER,
        fsGroup: RUN_AS_USER,
        seccompProfile,
      },
      containers: [
        {
          name: CONTAINER,
          image: inputs.image,
          imagePullPolicy: 'IfNotPresent',
          args,
          env: [...env, ...extraEnv],
          resources: podResources(tempStorage),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUN_AS_USER,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
            seccompProfile,
          },
          volumeMounts: mounts,
        },
      ],
      volumes: sizedVolumes(volumes, tempStorage),
    }),
  };
}
