/**
 * The bases rendered by the real kustomize (v5.7.1, what `kubectl apply -k` embeds; built by
 * scripts/install-kustomize.sh), each rendering then decoded strictly into the Kubernetes API
 * types (k8s-decode) and every pod template judged against "restricted" (pod-security): the
 * untouched k8s/ of a clone, the demo's examples/k8s-demo/, and the base `tilehouse k8s` writes in
 * a config repository of one's own, built with the very command it prints.
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { PLACEHOLDER_KUSTOMIZATION } from '../../src/deploy/base-scaffold.js';
import { listFiles } from '../support/cli-harness.js';
import { k8sToolOrSkip, runTool, tilehouseIn, type ToolResult } from './k8s-tools.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';
import { describeUnless, missing } from '../support/skip.js';

const kustomize = k8sToolOrSkip('kustomize', 'KUSTOMIZE_BIN');
const decoder = k8sToolOrSkip('k8s-decode', 'K8S_DECODE_BIN');
const podSecurity = k8sToolOrSkip('pod-security', 'POD_SECURITY_BIN');
const blocker = missing('kustomize', kustomize) ?? missing('k8s-decode', decoder) ?? missing('pod-security', podSecurity);

type Obj = Record<string, any>;

function build(directory: string, cwd?: string): ToolResult {
  return runTool(kustomize!, ['build', directory], { cwd });
}

/** A rendering that kustomize built, the strict decode accepts and "restricted" admits. */
function expectDeployable(rendered: ToolResult): Obj[] {
  expect(rendered.stderr).toBe('');
  expect(rendered.status).toBe(0);
  const decoded = runTool(decoder!, [], { input: rendered.stdout });
  expect(decoded.stderr).toBe('');
  expect(decoded.status).toBe(0);
  const judged = runTool(podSecurity!, [], { input: rendered.stdout });
  expect(judged.stdout).not.toMatch(/^refused/m);
  expect(judged.status).toBe(0);
  return parseAllDocuments(rendered.stdout)
    .map((document) => document.toJS() as Obj)
    .filter((object) => object !== null);
}

function kindsAndNames(objects: Obj[]): string[] {
  return objects.map((object) => `${object.kind} ${object.metadata.name}`);
}

describeUnless(blocker)('kustomize build (the real kustomize)', () => {
  it("of an untouched clone's k8s/ renders nothing: `kubectl apply -k k8s/` starts no demo CronJob", () => {
    const rendered = build('k8s');
    expect(rendered.stderr).toBe('');
    expect(rendered.status).toBe(0);
    expect(
      parseAllDocuments(rendered.stdout)
        .map((document) => document.toJS())
        .filter((object) => object !== null),
    ).toEqual([]);
  });

  it('of the demo base examples/k8s-demo/ renders the namespace, the account, the ConfigMaps and the five CronJobs', () => {
    const objects = expectDeployable(build('examples/k8s-demo'));
    expect(kindsAndNames(objects)).toEqual([
      'Namespace tilehouse',
      'ServiceAccount tilehouse',
      'ConfigMap tilehouse-config',
      'ConfigMap tilehouse-jobs',
      'CronJob tilehouse-daily-incidents-by-severity',
      'CronJob tilehouse-incident-types-resolution',
      'CronJob tilehouse-incidents-by-month-severity',
      'CronJob tilehouse-incidents-incremental',
      'CronJob tilehouse-tag-postmortem-breakdown',
    ]);
    for (const object of objects.filter((candidate) => candidate.kind !== 'Namespace')) expect(object.metadata.namespace).toBe('tilehouse');
    for (const cronJob of objects.filter((object) => object.kind === 'CronJob')) {
      // kustomize's images: rewrote the generated `image: tilehouse`.
      expect(cronJob.spec.jobTemplate.spec.template.spec.containers[0].image).toBe('REGION-docker.pkg.dev/PROJECT/REPOSITORY/tilehouse:0.1.0');
    }
  });
});

const tilehouse = (args: string[], cwd: string) => tilehouseIn(cwd, args);

describeUnless(blocker)("tilehouse k8s in a config repository of one's own", () => {
  const repo = tempDirEachTest('tilehouse-config-repo-');
  const command = ['k8s', '--config', 'config/production.yaml', '--jobs', 'jobs', '--out', 'k8s/cronjobs.yaml'];

  beforeEach(async () => {
    await mkdir(path.join(repo.path, 'jobs'));
    await mkdir(path.join(repo.path, 'config'));
    for (const job of ['daily_incidents_by_severity.yaml', 'incidents_by_month_severity.yaml'])
      await cp(path.join('jobs', job), path.join(repo.path, 'jobs', job));
    await cp('config/production.example.yaml', path.join(repo.path, 'config', 'production.yaml'));
  });

  it('writes a complete base, and the command it prints deploys it as printed', async () => {
    const written = tilehouse(command, repo.path);
    expect(written.stderr).toBe('');
    expect(written.status).toBe(0);
    expect(await listFiles(path.join(repo.path, 'k8s'))).toEqual([
      'backfill-job.yaml',
      'cronjobs.yaml',
      'generated/config/production.yaml',
      'generated/jobs/daily_incidents_by_severity.yaml',
      'generated/jobs/incidents_by_month_severity.yaml',
      'generated/kustomization.yaml',
      'kustomization.yaml',
      'namespace.yaml',
      'serviceaccount.yaml',
    ]);

    // "deploy with: kubectl apply -k k8s/": apply -k is kustomize build, then apply.
    const printed = /^deploy with: kubectl apply -k (\S+)$/m.exec(written.stdout);
    expect(printed?.[1]).toBe('k8s/');
    const objects = expectDeployable(build(printed![1]!, repo.path));
    expect(kindsAndNames(objects)).toEqual([
      'Namespace tilehouse',
      'ServiceAccount tilehouse',
      'ConfigMap tilehouse-config',
      'ConfigMap tilehouse-jobs',
      'CronJob tilehouse-daily-incidents-by-severity',
      'CronJob tilehouse-incidents-by-month-severity',
    ]);
    const jobsMap = objects.find((object) => object.metadata.name === 'tilehouse-jobs')!;
    expect(Object.keys(jobsMap.data).sort()).toEqual(['daily_incidents_by_severity.yaml', 'incidents_by_month_severity.yaml']);
    expect(jobsMap.data['daily_incidents_by_severity.yaml']).toBe(await readFile(path.join(repo.path, 'jobs', 'daily_incidents_by_severity.yaml'), 'utf8'));
    expect(Object.keys(objects.find((object) => object.metadata.name === 'tilehouse-config')!.data)).toEqual(['production.yaml']);

    // The backfill template, outside the kustomization, passes the same checks on its own.
    const backfill = await readFile(path.join(repo.path, 'k8s', 'backfill-job.yaml'), 'utf8');
    expect(runTool(decoder!, [], { input: backfill }).status).toBe(0);
    expect(runTool(podSecurity!, [], { input: backfill }).stdout).toBe('allowed Job tilehouse-backfill-\n');
    // Its image is the one the new kustomization deploys, from the first run on.
    expect(backfill).toContain('image: REGION-docker.pkg.dev/PROJECT/REPOSITORY/tilehouse:0.1.0');

    const checked = tilehouse([...command, '--check'], repo.path);
    expect(checked.status).toBe(0);
  });

  it('never rewrites a kustomization, namespace or service account the user edited, and says it kept them', async () => {
    expect(tilehouse(command, repo.path).status).toBe(0);
    const kustomizationFile = path.join(repo.path, 'k8s', 'kustomization.yaml');
    const edited = (await readFile(kustomizationFile, 'utf8'))
      .replace('newName: REGION-docker.pkg.dev/PROJECT/REPOSITORY/tilehouse', 'newName: europe-docker.pkg.dev/acme/etl/tilehouse')
      .replace('newTag: 0.1.0', 'newTag: "2.3.4"')
      .replace('  - cronjobs.yaml', '  - ./cronjobs.yaml'); // legal spelling of the same resource: no warning
    await writeFile(kustomizationFile, edited);
    const serviceAccountFile = path.join(repo.path, 'k8s', 'serviceaccount.yaml');
    const account = (await readFile(serviceAccountFile, 'utf8')).replaceAll('PROJECT', 'acme-prod');
    await writeFile(serviceAccountFile, account);
    await writeFile(
      path.join(repo.path, 'jobs', 'incidents_by_month_severity.yaml'),
      (await readFile(path.join(repo.path, 'jobs', 'incidents_by_month_severity.yaml'), 'utf8')).replace(/^( {2}cron: ).*$/m, '$1"15 6 * * *"'),
    );

    const again = tilehouse(command, repo.path);
    expect(again.stderr).toBe('');
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('kept as they are (yours; written only when absent): k8s/kustomization.yaml, k8s/namespace.yaml, k8s/serviceaccount.yaml');
    expect(await readFile(kustomizationFile, 'utf8')).toBe(edited);
    expect(await readFile(serviceAccountFile, 'utf8')).toBe(account);

    const objects = expectDeployable(build('k8s', repo.path));
    const cronJobs = objects.filter((object) => object.kind === 'CronJob');
    expect(cronJobs.find((cronJob) => cronJob.metadata.name === 'tilehouse-incidents-by-month-severity')!.spec.schedule).toBe('15 6 * * *');
    for (const cronJob of cronJobs)
      expect(cronJob.spec.jobTemplate.spec.template.spec.containers[0].image).toBe('europe-docker.pkg.dev/acme/etl/tilehouse:2.3.4');
    expect(objects.find((object) => object.kind === 'ServiceAccount')!.metadata.annotations['iam.gke.io/gcp-service-account']).toBe(
      'tilehouse@acme-prod.iam.gserviceaccount.com',
    );
    // The backfill template follows the edited image.
    expect(await readFile(path.join(repo.path, 'k8s', 'backfill-job.yaml'), 'utf8')).toContain('image: europe-docker.pkg.dev/acme/etl/tilehouse:2.3.4');
  });

  it("warns, keeping it, when the user's kustomization does not list what it generated", async () => {
    await mkdir(path.join(repo.path, 'k8s'));
    const own = 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cronjobs.yaml\n';
    await writeFile(path.join(repo.path, 'k8s', 'kustomization.yaml'), own);
    const written = tilehouse(command, repo.path);
    expect(written.status).toBe(0);
    expect(written.stderr).toContain('tilehouse k8s: warning: k8s/kustomization.yaml: resources does not list generated; it is yours, so it was kept as it is');
    expect(written.stderr).not.toContain('does not list cronjobs.yaml');
    expect(await readFile(path.join(repo.path, 'k8s', 'kustomization.yaml'), 'utf8')).toBe(own);
  });

  it('replaces the placeholder a clone ships in k8s/, but not an edited one', async () => {
    await mkdir(path.join(repo.path, 'k8s'));
    const kustomizationFile = path.join(repo.path, 'k8s', 'kustomization.yaml');
    await writeFile(kustomizationFile, PLACEHOLDER_KUSTOMIZATION);
    const replaced = tilehouse(command, repo.path);
    expect(replaced.status).toBe(0);
    expect(replaced.stdout).toContain('k8s/kustomization.yaml: replaced the empty placeholder');
    expect(kindsAndNames(expectDeployable(build('k8s', repo.path))).filter((entry) => entry.startsWith('CronJob'))).toHaveLength(2);

    const editedPlaceholder = PLACEHOLDER_KUSTOMIZATION.replace('resources: []', 'resources: []\nnamespace: mine');
    await writeFile(kustomizationFile, editedPlaceholder);
    const kept = tilehouse(command, repo.path);
    expect(kept.status).toBe(0);
    expect(await readFile(kustomizationFile, 'utf8')).toBe(editedPlaceholder);
    expect(kept.stderr).toContain('resources does not list cronjobs.yaml');
  });

  it('writes a base elsewhere, under another CronJobs file name, that renders as printed too', async () => {
    const written = tilehouse(['k8s', '--config', 'config/production.yaml', '--jobs', 'jobs', '--out', 'deploy/prod/schedules.yaml'], repo.path);
    expect(written.status).toBe(0);
    const printed = /^deploy with: kubectl apply -k (\S+)$/m.exec(written.stdout)![1]!;
    expect(printed).toBe('deploy/prod/');
    expect(kindsAndNames(expectDeployable(build(printed, repo.path)))).toContain('CronJob tilehouse-daily-incidents-by-severity');
    expect(await readFile(path.join(repo.path, 'deploy', 'prod', 'kustomization.yaml'), 'utf8')).toMatch(/^ {2}- schedules\.yaml$/m);
  });
});
