/**
 * The demo's committed Kubernetes base (examples/k8s-demo/, written by `tilehouse k8s` from jobs/),
 * checked as data, and the k8s/ of a clone, which deploys nothing until `tilehouse k8s` runs.
 * There is no cluster and no
 * Docker engine on the machines this runs on: nothing here applies or schedules anything. The
 * manifests are parsed with the `yaml` package and every invariant is asserted on the objects.
 * The real kustomize builds the base and k8s/ in kustomize-build.test.ts (no kubectl needed).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { loadEnvironment, loadJobs, type LoadedJob } from '../../src/config/load-config.js';
import type { EnvironmentConfig } from '../../src/config/environment-schema.js';
import { PLACEHOLDER_KUSTOMIZATION } from '../../src/deploy/base-scaffold.js';
import { cronJobName } from '../../src/deploy/job-manifests.js';
import { runCli } from '../support/cli-harness.js';

// The demo's generated base, kept apart from k8s/ so that `kubectl apply -k k8s/` on a clone starts
// no demo CronJob. Written by the command in its headers; --check writes nothing.
const BASE = path.join('examples', 'k8s-demo');
const K8S_ARGS = ['k8s', '--config', 'config/production.example.yaml', '--jobs', 'jobs', '--out', `${BASE}/cronjobs.yaml`];

type Obj = Record<string, any>;
interface Doc {
  file: string;
  object: Obj;
}

let docs: Doc[];
let jobs: LoadedJob[];
let environment: EnvironmentConfig;
let dockerEnv: Record<string, string>;

async function yamlFilesBelow(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && /\.ya?ml$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

beforeAll(async () => {
  docs = [];
  for (const file of [...(await yamlFilesBelow(BASE)), path.join('k8s', 'secret.example.yaml')]) {
    for (const document of parseAllDocuments(await readFile(file, 'utf8'))) {
      expect(document.errors, `${file}: ${document.errors.map((error) => error.message).join('; ')}`).toEqual([]);
      const object = document.toJS() as Obj | null;
      if (object !== null) docs.push({ file, object });
    }
  }
  jobs = await loadJobs('jobs');
  environment = await loadEnvironment('config/production.example.yaml');
  // ENV lines of the Dockerfile's final stage: where the image expects its files.
  const dockerfile = (await readFile('Dockerfile', 'utf8')).replace(/\\\n/g, ' ');
  dockerEnv = Object.fromEntries([...dockerfile.matchAll(/\b([A-Z_]+)=(\S+)/g)].map((match) => [match[1]!, match[2]!]));
});

function ofKind(kind: string, file?: string): Obj[] {
  return docs.filter((doc) => doc.object.kind === kind && (file === undefined || doc.file === file)).map((doc) => doc.object);
}

function containerOf(pod: Obj): Obj {
  expect(pod.containers).toHaveLength(1);
  return pod.containers[0];
}

/** The value a container runs with: its own securityContext field, else the pod's. */
function effective(pod: Obj, field: string): unknown {
  return containerOf(pod).securityContext?.[field] ?? pod.securityContext?.[field];
}

function mountedVolume(pod: Obj, mountPath: string): Obj | undefined {
  const mount = containerOf(pod).volumeMounts.find((candidate: Obj) => candidate.mountPath === mountPath);
  return mount === undefined ? undefined : pod.volumes.find((volume: Obj) => volume.name === mount.name);
}

/** Everything every tilehouse pod must satisfy, CronJob or backfill. */
function expectLockedDownPod(pod: Obj): void {
  const container = containerOf(pod);
  // podFailurePolicy is only allowed with restartPolicy Never.
  expect(pod.restartPolicy).toBe('Never');
  expect(pod.serviceAccountName).toBe('tilehouse');

  expect(effective(pod, 'runAsNonRoot')).toBe(true);
  expect(effective(pod, 'runAsUser')).toBe(10001);
  expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
  expect(container.securityContext.allowPrivilegeEscalation).toBe(false);
  expect(container.securityContext.capabilities.drop).toEqual(['ALL']);
  expect(container.securityContext.capabilities.add).toBeUndefined();
  expect((effective(pod, 'seccompProfile') as Obj).type).toBe('RuntimeDefault');

  // A read-only root needs a writable temp directory: an emptyDir at the image's TMPDIR.
  expect(dockerEnv.TMPDIR).toBe('/tmp');
  expect(mountedVolume(pod, dockerEnv.TMPDIR!)?.emptyDir).toEqual({ sizeLimit: '1Gi' });

  // Jobs and config come from the ConfigMaps, where the image looks for them.
  expect(mountedVolume(pod, dockerEnv.TILEHOUSE_JOBS!)?.configMap?.name).toBe('tilehouse-jobs');
  const env = new Map<string, Obj>(container.env.map((entry: Obj) => [entry.name, entry]));
  expect(env.get('TILEHOUSE_JOBS')?.value).toBe(dockerEnv.TILEHOUSE_JOBS);
  const configPath = env.get('TILEHOUSE_CONFIG')?.value as string;
  expect(path.posix.dirname(configPath)).toBe(path.posix.dirname(dockerEnv.TILEHOUSE_CONFIG!));
  expect(mountedVolume(pod, path.posix.dirname(configPath))?.configMap?.name).toBe('tilehouse-config');
  for (const mount of container.volumeMounts.filter((candidate: Obj) => candidate.name === 'jobs' || candidate.name === 'config')) {
    expect(mount.readOnly).toBe(true);
  }

  // Credentials: the id from the Secret as $TILEHOUSE_CLIENT_ID, the secret as the file the config names.
  expect(env.get('TILEHOUSE_CLIENT_ID')?.valueFrom).toEqual({ secretKeyRef: { name: 'tilehouse-credentials', key: 'client-id' } });
  const secretFile = environment.source.clientSecretFile!;
  const secretVolume = mountedVolume(pod, path.posix.dirname(secretFile));
  expect(secretVolume?.secret).toMatchObject({ secretName: 'tilehouse-credentials', items: [{ key: 'client-secret', path: path.posix.basename(secretFile) }] });
  expect(JSON.stringify(container.env)).not.toMatch(/"value":"[^"]*secret/i);

  expect(container.resources).toEqual({
    requests: { cpu: '100m', memory: '208Mi', 'ephemeral-storage': '1Gi' },
    limits: { memory: '352Mi', 'ephemeral-storage': '1Gi' },
  });
}

function expectJobSpec(spec: Obj): void {
  expect(spec.backoffLimit).toBeGreaterThanOrEqual(0);
  expect(spec.activeDeadlineSeconds).toBeGreaterThan(0);
  expect(spec.podFailurePolicy.rules).toContainEqual({
    action: 'FailJob',
    onExitCodes: { containerName: 'tilehouse', operator: 'In', values: [2] },
  });
  expectLockedDownPod(spec.template.spec);
}

describe('the demo base examples/k8s-demo/', () => {
  it('are current: `tilehouse k8s --check` finds nothing stale against jobs/ and the config', async () => {
    const result = await runCli([...K8S_ARGS, '--check'], { env: {} });
    expect(result.stderr.replace(/^tilehouse k8s: warning:.*\n/gm, '')).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it('have one CronJob per scheduled job, with its schedule, time zone and command', () => {
    const cronJobs = ofKind('CronJob');
    const scheduled = jobs.filter((job) => job.schedule !== undefined);
    expect(cronJobs.map((cronJob) => cronJob.metadata.name).sort()).toEqual(scheduled.map((job) => cronJobName(job.name)).sort());
    for (const job of scheduled) {
      const cronJob = cronJobs.find((candidate) => candidate.metadata.name === cronJobName(job.name))!;
      expect(cronJob.spec.schedule).toBe(job.schedule!.cron);
      expect(cronJob.spec.timeZone).toBe(job.schedule!.timezone);
      expect(containerOf(cronJob.spec.jobTemplate.spec.template.spec).args).toEqual(['run', '--job', job.name]);
    }
    // The README's example: kubectl create job --from=cronjob/tilehouse-incidents-by-month-severity …
    expect(cronJobs.map((cronJob) => cronJob.metadata.name)).toContain('tilehouse-incidents-by-month-severity');
    expect(ofKind('CronJob').every((cronJob) => docs.find((doc) => doc.object === cronJob)!.file === path.join(BASE, 'cronjobs.yaml'))).toBe(true);
  });

  it('run each CronJob alone, within deadlines, keeping some history, and never retry bad config', () => {
    for (const cronJob of ofKind('CronJob')) {
      expect(cronJob.apiVersion).toBe('batch/v1');
      expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
      expect(cronJob.spec.startingDeadlineSeconds).toBeGreaterThan(0);
      expect(cronJob.spec.successfulJobsHistoryLimit).toBeGreaterThan(0);
      expect(cronJob.spec.failedJobsHistoryLimit).toBeGreaterThan(0);
      expectJobSpec(cronJob.spec.jobTemplate.spec);
    }
  });

  it('have a backfill Job template with the same pod and the backfill command', async () => {
    const [backfill, ...more] = ofKind('Job', path.join(BASE, 'backfill-job.yaml'));
    expect(more).toEqual([]);
    expect(backfill!.metadata.generateName).toBe('tilehouse-backfill-');
    expectJobSpec(backfill!.spec);
    const container = containerOf(backfill!.spec.template.spec);
    expect(container.args).toEqual(['backfill', '--job', 'NAME', '--from', 'YYYY-MM-DD', '--to', 'YYYY-MM-DD']);

    // The sed line in its header works: per line, the first YYYY-MM-DD is --from, the next --to.
    const text = await readFile(path.join(BASE, 'backfill-job.yaml'), 'utf8');
    const filled = text
      .split('\n')
      .map((line) => line.replace(/NAME/g, 'daily_incidents_by_severity').replace('YYYY-MM-DD', '2024-01-01').replace('YYYY-MM-DD', '2024-03-31'))
      .join('\n');
    const job = parseAllDocuments(filled)
      .map((document) => document.toJS() as Obj | null)
      .find((object) => object?.kind === 'Job')!;
    expect(job.spec.template.spec.containers[0].args).toEqual([
      'backfill',
      '--job',
      'daily_incidents_by_severity',
      '--from',
      '2024-01-01',
      '--to',
      '2024-03-31',
    ]);
    expect(job.metadata.generateName).toBe('tilehouse-backfill-');

    // Its image is the one the kustomization deploys (it is not rewritten by kustomize).
    const kustomization = parse(await readFile(path.join(BASE, 'kustomization.yaml'), 'utf8')) as Obj;
    const image = kustomization.images.find((entry: Obj) => entry.name === 'tilehouse');
    expect(container.image).toBe(`${image.newName}:${image.newTag}`);
  });

  it('have a ServiceAccount annotated for GKE Workload Identity', () => {
    const [account] = ofKind('ServiceAccount');
    expect(account!.metadata.name).toBe('tilehouse');
    expect(account!.metadata.annotations['iam.gke.io/gcp-service-account']).toMatch(/^tilehouse@[A-Za-z0-9-]+\.iam\.gserviceaccount\.com$/);
  });

  it('have an example Secret with the two keys and no values, which the kustomization does not apply', async () => {
    const secrets = docs.filter((doc) => doc.object.kind === 'Secret');
    expect(secrets.map((doc) => doc.file)).toEqual([path.join('k8s', 'secret.example.yaml')]);
    const secret = secrets[0]!.object;
    expect(secret.metadata.name).toBe('tilehouse-credentials');
    expect(secret.data).toBeUndefined();
    expect(secret.stringData).toEqual({ 'client-id': '', 'client-secret': '' });
  });

  it('form a kustomize base that applies the generated ConfigMaps and CronJobs, not the example Secret or the template', async () => {
    const [kustomization] = ofKind('Kustomization', path.join(BASE, 'kustomization.yaml'));
    expect(kustomization!.namespace).toBe('tilehouse');
    expect(kustomization!.resources).toEqual(expect.arrayContaining(['serviceaccount.yaml', 'generated', 'cronjobs.yaml']));
    expect(kustomization!.resources).not.toContain('secret.example.yaml');
    expect(kustomization!.resources).not.toContain('backfill-job.yaml');
    for (const resource of kustomization!.resources as string[]) await expect(readdir(BASE)).resolves.toContain(resource);

    // kustomize only reads files inside k8s/: the ConfigMaps are built from copies in generated/.
    const [generated] = ofKind('Kustomization', path.join(BASE, 'generated', 'kustomization.yaml'));
    const byName = new Map<string, string[]>(generated!.configMapGenerator.map((entry: Obj) => [entry.name, entry.files]));
    expect(byName.get('tilehouse-jobs')).toEqual(jobs.map((job) => `jobs/${path.basename(job.file)}`).sort());
    expect(byName.get('tilehouse-config')).toEqual(['config/production.example.yaml']);
    for (const job of jobs) {
      expect(await readFile(path.join(BASE, 'generated', 'jobs', path.basename(job.file)), 'utf8')).toBe(await readFile(job.file, 'utf8'));
    }
    // Stable names: the backfill template and the CronJobs refer to the ConfigMaps by these names.
    expect(generated!.generatorOptions.disableNameSuffixHash).toBe(true);
  });
});

describe('k8s/ of an untouched clone', () => {
  it('deploys nothing: its kustomization is the placeholder `tilehouse k8s` replaces, listing no resource', async () => {
    const text = await readFile('k8s/kustomization.yaml', 'utf8');
    expect(text).toBe(PLACEHOLDER_KUSTOMIZATION);
    expect((parse(text) as Obj).resources).toEqual([]);
    expect(text).toContain('tilehouse k8s --config config/production.yaml --jobs jobs --out k8s/cronjobs.yaml');
    // No workload lies beside it for a hand-edited `resources:` to pick up by accident.
    const workloads: string[] = [];
    for (const file of await yamlFilesBelow('k8s')) {
      for (const document of parseAllDocuments(await readFile(file, 'utf8'))) {
        const kind = (document.toJS() as Obj | null)?.kind;
        if (kind === 'CronJob' || kind === 'Job' || kind === 'ConfigMap') workloads.push(`${file}: ${kind}`);
      }
    }
    expect(workloads).toEqual([]);
  });
});
