/** The manifest generator on small workspaces in a temp directory (no cluster involved). */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { ConfigError } from '../../src/config/config-error.js';
import { loadEnvironment, loadJobs } from '../../src/config/load-config.js';
import { indexedBackfillJob } from '../../src/deploy/job-manifests.js';
import { planManifests, type ManifestPlan, type PlanInputs } from '../../src/deploy/plan-manifests.js';
import { planPod } from '../../src/deploy/pod-template.js';
import { PLACEHOLDER_KUSTOMIZATION } from '../../src/deploy/base-scaffold.js';
import { staleFiles, writeManifests } from '../../src/deploy/write-manifests.js';
import { listFiles } from '../support/cli-harness.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

type Obj = Record<string, any>;

const QUERY = { items: [{ header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, filters: [] }], options: {} };

function job(name: string, extra: Obj = {}): Obj {
  return { name, tile: `tile-${name}`, schedule: { cron: '0 6 * * *', timezone: 'Europe/Berlin' }, query: QUERY, sinks: [{ type: 'bigquery' }], ...extra };
}

const SOURCE = {
  baseUrl: 'https://acme.incidents.example.com',
  authUrl: 'https://auth.incidents.example.com',
  clientId: '${TILEHOUSE_CLIENT_ID}',
  clientSecretFile: '/var/run/secrets/tilehouse/client-secret',
};

const temp = tempDirEachTest();

async function inputs(jobs: Obj[], environment: Obj = {}): Promise<PlanInputs> {
  const jobsDir = path.join(temp.path, 'jobs');
  await rm(jobsDir, { recursive: true, force: true });
  await mkdir(jobsDir, { recursive: true });
  for (const entry of jobs) await writeFile(path.join(jobsDir, `${entry.name}.yaml`), stringify(entry));
  const configFile = path.join(temp.path, 'prod.yaml');
  // A bucket for the history, as a cluster needs (the local default warns: see its own test).
  const history = { location: 'gs://acme-history/tilehouse' };
  await writeFile(configFile, stringify({ source: SOURCE, sinks: { bigquery: { dataset: 'reports' } }, history, ...environment }));
  return {
    jobs: await loadJobs(jobsDir),
    environment: await loadEnvironment(configFile),
    configFile,
    outFile: path.join(temp.path, 'k8s', 'cronjobs.yaml'),
    command: 'tilehouse k8s --config prod.yaml',
  };
}

async function plan(jobs: Obj[], environment: Obj = {}): Promise<ManifestPlan> {
  return planManifests(await inputs(jobs, environment));
}

function objectsIn(plan: ManifestPlan, name: string): Obj[] {
  const file = plan.files.find((candidate) => path.basename(candidate.file) === name)!;
  return parseAllDocuments(file.text)
    .map((document) => document.toJS() as Obj | null)
    .filter((object): object is Obj => object !== null);
}

function pod(cronJob: Obj): Obj {
  return cronJob.spec.jobTemplate.spec.template.spec;
}

async function configError(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ConfigError);
  expect(error).toMatchObject({ code: 'config_invalid' });
  return (error as ConfigError).message;
}

describe('planManifests', () => {
  it('makes no CronJob for a job without a schedule, but still ships its file in the ConfigMap', async () => {
    const result = await plan([job('daily'), job('on_demand', { schedule: undefined })]);
    const cronJobs = objectsIn(result, 'cronjobs.yaml');
    expect(cronJobs.map((cronJob) => cronJob.metadata.name)).toEqual(['tilehouse-daily']);
    expect(cronJobs[0]!.spec).toMatchObject({ schedule: '0 6 * * *', timeZone: 'Europe/Berlin' });
    expect(result.files.find((file) => path.basename(file.file) === 'cronjobs.yaml')!.text).toContain(
      'Jobs without a schedule (no CronJob, run on demand): on_demand.',
    );
    const [generated] = objectsIn(result, 'kustomization.yaml');
    expect(generated!.configMapGenerator[0].files).toEqual(['jobs/daily.yaml', 'jobs/on_demand.yaml']);
  });

  it('renders the same bytes every time', async () => {
    const first = await plan([job('a'), job('b')]);
    const second = await plan([job('a'), job('b')]);
    expect(second.files).toEqual(first.files);
  });

  it('renders no YAML anchors even where objects are shared', async () => {
    const result = await plan([job('a')]);
    expect(result.files.map((file) => file.text).join('\n')).not.toMatch(/[&*]a\d/);
  });

  it.each([
    ['0 0 6 * * *', /takes 5 fields .* this has 6/],
    ['0 6 L * *', /L, W, # and TZ= are croner extensions/],
    ['0 6 * * 5#2', /L, W, # and TZ= are croner extensions/],
    ['@every 5m', /Kubernetes knows the macros/],
  ])('refuses a schedule Kubernetes cannot read: %s', async (cron, message) => {
    // The in-process scheduler may accept these; set after loading so only the generator judges.
    const planned = await inputs([job('x')]);
    const jobs = planned.jobs.map((entry) => ({ ...entry, schedule: { cron, timezone: 'UTC' } }));
    const problem = await configError(planManifests({ ...planned, jobs }));
    expect(problem).toMatch(/x\.yaml: schedule\.cron = /);
    expect(problem).toMatch(message);
  });

  it('accepts Kubernetes macros and day names', async () => {
    const result = await plan([job('weekly', { schedule: { cron: '@weekly' } }), job('weekdays', { schedule: { cron: '0 7 * * MON-FRI' } })]);
    expect(objectsIn(result, 'cronjobs.yaml').map((cronJob) => cronJob.spec.schedule)).toEqual(['0 7 * * MON-FRI', '@weekly']);
  });

  it('refuses a job name too long for a CronJob name', async () => {
    const message = await configError(plan([job(`a${'_x'.repeat(25)}`)]));
    expect(message).toMatch(/name = "a_x_x.*": the CronJob would be named tilehouse-a-x-x.*: at most 52 characters/);
  });

  it('wires ${VAR} secrets as env from the Secret and …File secrets as one read-only mount', async () => {
    const envOnly = await plan([job('a')], { source: { ...SOURCE, clientSecretFile: undefined, clientSecret: '${MY_SECRET}' } });
    const envPod = pod(objectsIn(envOnly, 'cronjobs.yaml')[0]!);
    expect(envPod.containers[0].env).toContainEqual({
      name: 'MY_SECRET',
      valueFrom: { secretKeyRef: { name: 'tilehouse-credentials', key: 'client-secret' } },
    });
    expect(envPod.volumes.find((volume: Obj) => volume.secret)).toBeUndefined();

    const files = await plan([job('a')], { source: { ...SOURCE, clientId: undefined, clientIdFile: '/var/run/secrets/tilehouse/client-id' } });
    const filePod = pod(objectsIn(files, 'cronjobs.yaml')[0]!);
    expect(filePod.volumes.find((volume: Obj) => volume.name === 'credentials').secret.items).toEqual([
      { key: 'client-id', path: 'client-id' },
      { key: 'client-secret', path: 'client-secret' },
    ]);
    // No credential in the env: the downward API's pod attributes for telemetry follow the three settings.
    expect(filePod.containers[0].env.map((entry: Obj) => entry.name)).toEqual([
      'TILEHOUSE_CONFIG',
      'TILEHOUSE_JOBS',
      'NODE_OPTIONS',
      'K8S_POD_NAME',
      'K8S_POD_UID',
      'K8S_NAMESPACE_NAME',
      'K8S_NODE_NAME',
    ]);
  });

  it('refuses secret files in two directories or at a relative path', async () => {
    expect(await configError(plan([job('a')], { source: { ...SOURCE, clientId: undefined, clientIdFile: '/etc/other/client-id' } }))).toMatch(
      /source\.clientSecretFile = .*must be in the same directory as the other secret file \(\/etc\/other\)/,
    );
    expect(await configError(plan([job('a')], { source: { ...SOURCE, clientSecretFile: 'secret.txt' } }))).toMatch(
      /source\.clientSecretFile = "secret\.txt": must be an absolute path/,
    );
  });

  it('gives CSV and temp directories outside /tmp a writable emptyDir, and warns that CSV output dies with the pod', async () => {
    const result = await plan([job('a', { sinks: [{ type: 'csv' }, { type: 'csv', path: '/exports/{tile}/{date}.csv' }] })], {
      sinks: { csv: { directory: 'out' } },
      tempDirectory: '/var/tmp/tilehouse',
    });
    const spec = pod(objectsIn(result, 'cronjobs.yaml')[0]!);
    const emptyDirs = spec.volumes.filter((volume: Obj) => volume.emptyDir).map((volume: Obj) => volume.name);
    const mounts = spec.containers[0].volumeMounts.filter((mount: Obj) => emptyDirs.includes(mount.name)).map((mount: Obj) => mount.mountPath);
    expect(mounts.sort()).toEqual(['/app/out', '/exports', '/tmp', '/var/tmp/tilehouse']);
    expect(result.warnings).toEqual([
      expect.stringMatching(/^a write CSV under \/app\/out: .*emptyDir/),
      expect.stringMatching(/^a write CSV under \/exports/),
    ]);
  });

  it('gives gs:// CSV targets no volume and no warning, and keeps both for a local CSV target beside them', async () => {
    const inBucket = await plan([job('a', { sinks: [{ type: 'csv' }, { type: 'csv', path: 'gs://acme-exports/{tile}/{date}.csv' }] })], {
      sinks: { csv: { directory: 'gs://acme-exports/nightly' } },
    });
    const spec = pod(objectsIn(inBucket, 'cronjobs.yaml')[0]!);
    expect(spec.volumes.filter((volume: Obj) => volume.emptyDir).map((volume: Obj) => volume.name)).toEqual(['tmp']);
    expect(spec.containers[0].volumeMounts.map((mount: Obj) => mount.mountPath)).not.toContain(expect.stringMatching(/gs:|acme-exports/));
    expect(inBucket.warnings).toEqual([]);

    // The legal-but-unusual mix: a bucket directory and one sink with an absolute local path.
    const mixed = await plan([job('a', { sinks: [{ type: 'csv' }, { type: 'csv', path: '/exports/{date}.csv' }] })], {
      sinks: { csv: { directory: 'gs://acme-exports' } },
    });
    const mixedSpec = pod(objectsIn(mixed, 'cronjobs.yaml')[0]!);
    const emptyDirs = mixedSpec.volumes.filter((volume: Obj) => volume.emptyDir).map((volume: Obj) => volume.name);
    expect(
      mixedSpec.containers[0].volumeMounts
        .filter((mount: Obj) => emptyDirs.includes(mount.name))
        .map((mount: Obj) => mount.mountPath)
        .sort(),
    ).toEqual(['/exports', '/tmp']);
    expect(mixed.warnings).toEqual([expect.stringMatching(/^a write CSV under \/exports: .*emptyDir.*gs:\/\//)]);
  });

  it("bounds every pod's local disk: 1Gi for /tmp, each output emptyDir and the container, or the job's own tempStorage", async () => {
    const result = await plan([job('a', { sinks: [{ type: 'csv' }] }), job('big', { sinks: [{ type: 'bigquery' }], tempStorage: '6Gi' })], {
      sinks: { csv: { directory: 'out' }, bigquery: { dataset: 'reports' } },
    });
    const [small, big] = objectsIn(result, 'cronjobs.yaml').map(pod);
    expect(small!.volumes.filter((volume: Obj) => volume.emptyDir).map((volume: Obj) => [volume.name, volume.emptyDir])).toEqual([
      ['tmp', { sizeLimit: '1Gi' }],
      ['output', { sizeLimit: '1Gi' }],
    ]);
    expect(small!.containers[0].resources.requests['ephemeral-storage']).toBe('1Gi');
    expect(small!.containers[0].resources.limits['ephemeral-storage']).toBe('1Gi');
    expect(big!.volumes.find((volume: Obj) => volume.name === 'tmp').emptyDir).toEqual({ sizeLimit: '6Gi' });
    expect(big!.containers[0].resources).toMatchObject({ requests: { 'ephemeral-storage': '6Gi' }, limits: { 'ephemeral-storage': '6Gi' } });
    // The Indexed backfill of the big job takes its size too.
    const planned = await inputs([job('big', { tempStorage: '6Gi' })]);
    const backfill = indexedBackfillJob(planPod({ ...planned, image: 'tilehouse' }), {
      job: planned.jobs[0]!,
      from: '2026-01-01',
      to: '2026-01-31',
      step: 'day',
      completions: 2,
      parallelism: 2,
    });
    expect((backfill as Obj).spec.template.spec.volumes.find((volume: Obj) => volume.name === 'tmp').emptyDir).toEqual({ sizeLimit: '6Gi' });
  });

  it('refuses a tempStorage that is not a binary Kubernetes quantity', async () => {
    for (const bad of ['1GB', '1.5Gi', '0Gi', '1024']) {
      await expect(inputs([job('a', { tempStorage: bad })])).rejects.toMatchObject({
        code: 'config_invalid',
        message: expect.stringMatching(/tempStorage.*Kubernetes quantity in binary units/s),
      });
    }
  });

  it('adds nothing for directories below /tmp and warns about nothing without csv sinks', async () => {
    const result = await plan([job('a')], { tempDirectory: '/tmp/tilehouse' });
    const spec = pod(objectsIn(result, 'cronjobs.yaml')[0]!);
    expect(spec.volumes.filter((volume: Obj) => volume.emptyDir).map((volume: Obj) => volume.name)).toEqual(['tmp']);
    expect(result.warnings).toEqual([]);
  });

  it('warns that a local history.location keeps nothing in the pod, naming where it lands and the setting to change', async () => {
    const mountOf = (spec: Obj, file: string): Obj =>
      spec.containers[0].volumeMounts
        .filter((mount: Obj) => file === mount.mountPath || file.startsWith(`${mount.mountPath}/`))
        .sort((a: Obj, b: Obj) => b.mountPath.length - a.mountPath.length)[0];
    const volumeOf = (spec: Obj, mount: Obj): Obj => spec.volumes.find((volume: Obj) => volume.name === mount.name);

    // The default: beside the environment file, which in the pod is the config ConfigMap.
    const byDefault = await plan([job('a')], { history: { location: '.tilehouse/history' } });
    expect(byDefault.warnings).toEqual([
      'history.location in prod.yaml is the local directory .tilehouse/history, in the pod /etc/tilehouse/config/.tilehouse/history, ' +
        'on the read-only ConfigMap mount: every run logs history_unavailable and keeps no record; ' +
        'set history.location to gs://bucket/prefix or s3://bucket/prefix (or mount a persistent volume there in your own overlay)',
    ]);
    // The generated pod agrees: the config file's directory is a read-only ConfigMap volume.
    const spec = pod(objectsIn(byDefault, 'cronjobs.yaml')[0]!);
    const configDirectory = path.posix.dirname(spec.containers[0].env.find((entry: Obj) => entry.name === 'TILEHOUSE_CONFIG').value);
    const mount = mountOf(spec, path.posix.join(configDirectory, '.tilehouse/history'));
    expect(mount.readOnly).toBe(true);
    expect(volumeOf(spec, mount).configMap).toEqual({ name: 'tilehouse-config' });

    // Below /tmp: writable, but an emptyDir, gone with the pod.
    const inTmp = await plan([job('a')], { history: { location: '/tmp/history' } });
    expect(inTmp.warnings).toEqual([expect.stringContaining('in the pod /tmp/history, in an emptyDir, gone with the pod')]);
    expect(volumeOf(pod(objectsIn(inTmp, 'cronjobs.yaml')[0]!), mountOf(pod(objectsIn(inTmp, 'cronjobs.yaml')[0]!), '/tmp/history')).emptyDir).toBeDefined();
    // Elsewhere: no volume at all, the read-only root file system.
    const elsewhere = await plan([job('a')], { history: { location: '/var/lib/tilehouse/history' } });
    expect(mountOf(pod(objectsIn(elsewhere, 'cronjobs.yaml')[0]!), '/var/lib/tilehouse/history')).toBeUndefined();
    expect(elsewhere.warnings).toEqual([expect.stringContaining("on the container's read-only root file system")]);
    // A bucket: nothing to say.
    for (const location of ['gs://acme/history', 's3://acme/history']) expect((await plan([job('a')], { history: { location } })).warnings).toEqual([]);
  });

  it('points TILEHOUSE_CONFIG at the config file in the ConfigMap', async () => {
    const result = await plan([job('a')]);
    const env = pod(objectsIn(result, 'cronjobs.yaml')[0]!).containers[0].env;
    expect(env).toContainEqual({ name: 'TILEHOUSE_CONFIG', value: '/etc/tilehouse/config/prod.yaml' });
    expect(objectsIn(result, 'kustomization.yaml')[0]!.configMapGenerator[1]).toEqual({ name: 'tilehouse-config', files: ['config/prod.yaml'] });
  });

  it('takes the backfill image from the kustomization beside the CronJobs', async () => {
    await mkdir(path.join(temp.path, 'k8s'), { recursive: true });
    await writeFile(
      path.join(temp.path, 'k8s', 'kustomization.yaml'),
      stringify({ images: [{ name: 'tilehouse', newName: 'registry.example/tilehouse', newTag: '1.2.3' }] }),
    );
    const result = await plan([job('a')]);
    expect(objectsIn(result, 'backfill-job.yaml')[0]!.spec.template.spec.containers[0].image).toBe('registry.example/tilehouse:1.2.3');
    expect(pod(objectsIn(result, 'cronjobs.yaml')[0]!).containers[0].image).toBe('tilehouse');
  });
});

describe('staleFiles and writeManifests', () => {
  it('writes every file, then finds nothing stale', async () => {
    const result = await plan([job('a'), job('b')]);
    expect((await writeManifests(result)).map((entry) => entry.reason)).toEqual(result.files.map(() => 'missing'));
    expect(await staleFiles(result)).toEqual([]);
    expect(await listFiles(path.join(temp.path, 'k8s'))).toEqual([
      'backfill-job.yaml',
      'cronjobs.yaml',
      'generated/config/prod.yaml',
      'generated/jobs/a.yaml',
      'generated/jobs/b.yaml',
      'generated/kustomization.yaml',
      'kustomization.yaml',
      'namespace.yaml',
      'serviceaccount.yaml',
    ]);
  });

  it('writes the hand-editable files only when absent, and replaces only the untouched placeholder', async () => {
    const result = await plan([job('a')]);
    await mkdir(path.join(temp.path, 'k8s'), { recursive: true });
    await writeFile(path.join(temp.path, 'k8s', 'kustomization.yaml'), PLACEHOLDER_KUSTOMIZATION);
    const edited = '# mine\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: etl\n';
    await writeFile(path.join(temp.path, 'k8s', 'namespace.yaml'), edited);
    const stale = (await staleFiles(result)).filter(
      (entry) => !entry.file.includes('generated') && !entry.file.endsWith('job.yaml') && !entry.file.endsWith('jobs.yaml'),
    );
    expect(stale.map((entry) => `${path.basename(entry.file)}: ${entry.reason}`)).toEqual(['kustomization.yaml: placeholder', 'serviceaccount.yaml: missing']);
    await writeManifests(result);
    expect(await readFile(path.join(temp.path, 'k8s', 'namespace.yaml'), 'utf8')).toBe(edited);
    expect(await readFile(path.join(temp.path, 'k8s', 'kustomization.yaml'), 'utf8')).toContain('  - generated\n  - cronjobs.yaml\n');

    await writeFile(path.join(temp.path, 'k8s', 'kustomization.yaml'), PLACEHOLDER_KUSTOMIZATION.replace('resources: []', 'resources: []  # mine'));
    const afterEdit = (await staleFiles(await plan([job('a')]))).map((entry) => path.basename(entry.file));
    expect(afterEdit).not.toContain('kustomization.yaml');
    // Only the template follows: an edited placeholder names no image, so it gets the default one.
    expect(afterEdit).toEqual(['backfill-job.yaml']);
  });

  it('reports a changed schedule and a removed job, and writing removes the leftover copy', async () => {
    await writeManifests(await plan([job('a'), job('b')]));
    const changed = await plan([job('a', { schedule: { cron: '0 7 * * *' } })]);
    const stale = await staleFiles(changed);
    const shown = stale.map((entry) => `${path.relative(temp.path, entry.file)}: ${entry.reason}`).sort();
    expect(shown).toEqual([
      'k8s/cronjobs.yaml: differs',
      'k8s/generated/jobs/a.yaml: differs',
      'k8s/generated/jobs/b.yaml: no longer generated',
      'k8s/generated/kustomization.yaml: differs',
    ]);
    await writeManifests(changed);
    expect(await staleFiles(changed)).toEqual([]);
    expect(await listFiles(path.join(temp.path, 'k8s', 'generated', 'jobs'))).toEqual(['a.yaml']);
    expect(await readFile(path.join(temp.path, 'k8s', 'cronjobs.yaml'), 'utf8')).toContain('schedule: "0 7 * * *"');
  });
});
