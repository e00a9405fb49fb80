/** `tilehouse k8s` end to end in a temp workspace. Writes files only; no cluster is contacted. */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { listFiles, runCli, refusalCode } from '../support/cli-harness.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const temp = tempDirEachTest();
let jobsDir: string;
let outFile: string;
let args: string[];
beforeEach(async () => {
  jobsDir = path.join(temp.path, 'jobs');
  outFile = path.join(temp.path, 'k8s', 'cronjobs.yaml');
  await cp('jobs', jobsDir, { recursive: true });
  args = ['k8s', '--config', 'config/production.example.yaml', '--jobs', jobsDir, '--out', outFile];
});

async function setSchedule(file: string, cron: string | undefined): Promise<void> {
  const text = await readFile(file, 'utf8');
  const replaced = cron === undefined ? text.replace(/^schedule:\n(?: {2}.*\n)+/m, '') : text.replace(/^( {2}cron: ).*$/m, `$1"${cron}"`);
  expect(replaced).not.toBe(text);
  await writeFile(file, replaced);
}

describe('tilehouse k8s', () => {
  it('writes the CronJobs, the backfill template and the kustomize sources, then --check passes', async () => {
    const written = await runCli(args, { env: {} });
    expect(written.exitCode).toBe(0);
    expect(written.stdout).toMatch(/updated 12 files: .*cronjobs\.yaml \(5 CronJobs for 5 jobs\)/);
    expect(written.stdout).toContain('deploy with: kubectl apply -k');
    expect(await listFiles(path.join(temp.path, 'k8s'))).toEqual([
      'backfill-job.yaml',
      'cronjobs.yaml',
      'generated/config/production.example.yaml',
      'generated/jobs/daily_incidents_by_severity.yaml',
      'generated/jobs/incident_types_resolution.yaml',
      'generated/jobs/incidents_by_month_severity.yaml',
      'generated/jobs/incidents_incremental.yaml',
      'generated/jobs/tag_postmortem_breakdown.yaml',
      'generated/kustomization.yaml',
      'kustomization.yaml',
      'namespace.yaml',
      'serviceaccount.yaml',
    ]);
    // The example writes its CSV to gs://: no volume for it, so nothing to warn about.
    expect(written.stderr).toBe('');

    const checked = await runCli([...args, '--check'], { env: {} });
    expect(checked.exitCode).toBe(0);
    expect(checked.stdout).toContain('up to date: 12 generated files');

    const again = await runCli(args, { env: {} });
    expect(again.stdout).toMatch(/^unchanged: /);
    expect(again.stdout).toContain('kept as they are (yours; written only when absent):');
  });

  it('warns that a local CSV directory is an emptyDir in the pod, and mounts one there; a gs:// directory needs neither', async () => {
    const localConfig = path.join(temp.path, 'local.yaml');
    await writeFile(
      localConfig,
      (await readFile('config/production.example.yaml', 'utf8')).replace(/directory: gs:\/\/.*/, 'directory: /var/lib/tilehouse/out'),
    );
    const local = await runCli(['k8s', '--config', localConfig, '--jobs', jobsDir, '--out', outFile], { env: {} });
    expect(local.exitCode).toBe(0);
    expect(local.stderr).toMatch(/warning: .* write CSV under \/var\/lib\/tilehouse\/out: in the pod that is an emptyDir/);
    const mountsOf = async () =>
      parseAllDocuments(await readFile(outFile, 'utf8')).map((document) =>
        (
          document.toJS() as { spec: { jobTemplate: { spec: { template: { spec: { containers: Array<{ volumeMounts: Array<{ mountPath: string }> }> } } } } } }
        ).spec.jobTemplate.spec.template.spec.containers[0]!.volumeMounts.map((mount) => mount.mountPath),
      );
    for (const mounts of await mountsOf()) expect(mounts).toContain('/var/lib/tilehouse/out');

    const inBucket = await runCli(args, { env: {} });
    expect(inBucket.exitCode).toBe(0);
    expect(inBucket.stderr).not.toContain('warning');
    for (const mounts of await mountsOf()) expect(mounts).not.toContain('/var/lib/tilehouse/out');
  });

  it('--check exits 1 naming each stale file, and writes nothing', async () => {
    await runCli(args, { env: {} });
    await setSchedule(path.join(jobsDir, 'incidents_by_month_severity.yaml'), '15 6 * * *');
    const before = await readFile(outFile, 'utf8');

    const checked = await runCli([...args, '--check'], { env: {} });
    expect(checked.exitCode).toBe(1);
    expect(checked.stderr).toContain(
      `stale Kubernetes manifests; run: tilehouse k8s --config config/production.example.yaml --jobs ${jobsDir} --out ${outFile}`,
    );
    expect(checked.stderr).toMatch(/cronjobs\.yaml: differs/);
    expect(checked.stderr).toMatch(/generated\/jobs\/incidents_by_month_severity\.yaml: differs/);
    expect(await readFile(outFile, 'utf8')).toBe(before);

    expect((await runCli(args, { env: {} })).exitCode).toBe(0);
    const cronJobs = parseAllDocuments(await readFile(outFile, 'utf8')).map((document) => document.toJS());
    expect(cronJobs.find((cronJob) => cronJob.metadata.name === 'tilehouse-incidents-by-month-severity').spec.schedule).toBe('15 6 * * *');
  });

  it('drops the CronJob of a job whose schedule was removed', async () => {
    await setSchedule(path.join(jobsDir, 'tag_postmortem_breakdown.yaml'), undefined);
    expect((await runCli(args, { env: {} })).exitCode).toBe(0);
    const text = await readFile(outFile, 'utf8');
    expect(parseAllDocuments(text).map((document) => document.toJS().metadata.name)).toEqual([
      'tilehouse-daily-incidents-by-severity',
      'tilehouse-incident-types-resolution',
      'tilehouse-incidents-by-month-severity',
      'tilehouse-incidents-incremental',
    ]);
    expect(text).toContain('Jobs without a schedule (no CronJob, run on demand): tag_postmortem_breakdown.');
  });

  it('--check without --config compares against the config the manifests were generated from', async () => {
    expect((await runCli(args, { env: {} })).exitCode).toBe(0);
    // Not config/default.yaml (the demo's sandbox): the copy in generated/config/ names the one in use.
    const checked = await runCli(['k8s', '--check', '--jobs', jobsDir, '--out', outFile], { env: {} });
    expect(checked.stderr).not.toContain('stale');
    expect(checked.stdout).toContain('up to date: 12 generated files');
    expect(checked.exitCode).toBe(0);
    // $TILEHOUSE_CONFIG still wins.
    const other = await runCli(['k8s', '--check', '--jobs', jobsDir, '--out', outFile], { env: { TILEHOUSE_CONFIG: 'config/default.yaml' } });
    expect(other.exitCode).toBe(1);
  });

  it('--check reports missing files when nothing was generated yet', async () => {
    const checked = await runCli([...args, '--check'], { env: {} });
    expect(checked.exitCode).toBe(1);
    expect(checked.stderr).toMatch(/cronjobs\.yaml: missing/);
    expect(await listFiles(path.join(temp.path, 'k8s'))).toEqual([]);
  });

  it('exits 2 and writes nothing for an invalid job or a schedule Kubernetes cannot run', async () => {
    await setSchedule(path.join(jobsDir, 'incidents_by_month_severity.yaml'), '0 0 6 * * *');
    const sixFields = await runCli(args, { env: {} });
    expect(sixFields.exitCode).toBe(2);
    expect(refusalCode(sixFields)).toBe('config_invalid');
    expect(sixFields.stderr).toMatch(/incidents_by_month_severity\.yaml: schedule\.cron = "0 0 6 \* \* \*": a Kubernetes CronJob takes 5 fields/);
    expect(await listFiles(path.join(temp.path, 'k8s'))).toEqual([]);

    await mkdir(jobsDir, { recursive: true });
    await writeFile(path.join(jobsDir, 'broken.yaml'), 'name: Broken\n');
    const invalid = await runCli(args, { env: {} });
    expect(invalid.exitCode).toBe(2);
    expect(refusalCode(invalid)).toBe('config_invalid');
    expect(invalid.stderr).toMatch(/broken\.yaml:1: name = "Broken"/);
  });

  it('exits 2 on an unknown option and prints its help', async () => {
    const unknown = await runCli(['k8s', '--frobnicate'], { env: {} });
    expect(unknown.exitCode).toBe(2);
    expect(refusalCode(unknown)).toBe('usage_invalid');
    const help = await runCli(['k8s', '--help'], { env: {} });
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('Usage: tilehouse k8s [--config FILE] [--jobs DIR] [--out FILE] [--check]');
  });
});
