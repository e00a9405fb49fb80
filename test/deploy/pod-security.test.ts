/**
 * Every pod template tilehouse ships or prints, judged against the Pod Security Standard
 * "restricted" (what the generated namespace enforces) by the Pod Security Admission library
 * itself (k8s.io/pod-security-admission v0.36.6, scripts/pod-security), the evaluator the API
 * server runs on admission. Skipped when the evaluator is not built, outside CI; under CI its
 * absence fails.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { runCli } from '../support/cli-harness.js';
import { k8sToolOrSkip, printedBackfillJob, runTool } from './k8s-tools.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';
import { describeUnless, missing } from '../support/skip.js';

const podSecurity = k8sToolOrSkip('pod-security', 'POD_SECURITY_BIN');

const judge = (manifests: string) => runTool(podSecurity!, [], { input: manifests });

describeUnless(missing('pod-security', podSecurity))('pod templates under the "restricted" Pod Security Standard', () => {
  const scratch = tempDirForAll();
  let backfillTemplate: string;
  beforeAll(async () => {
    backfillTemplate = await readFile('examples/k8s-demo/backfill-job.yaml', 'utf8');
  });

  it('admits every CronJob of the demo base', async () => {
    const judged = judge(await readFile('examples/k8s-demo/cronjobs.yaml', 'utf8'));
    expect(judged.stderr).toBe('');
    expect(judged.stdout.trim().split('\n')).toEqual([
      'allowed CronJob tilehouse-daily-incidents-by-severity',
      'allowed CronJob tilehouse-incident-types-resolution',
      'allowed CronJob tilehouse-incidents-by-month-severity',
      'allowed CronJob tilehouse-incidents-incremental',
      'allowed CronJob tilehouse-tag-postmortem-breakdown',
    ]);
    expect(judged.status).toBe(0);
  });

  it('admits the backfill template', () => {
    const judged = judge(backfillTemplate);
    expect(judged.stdout).toBe('allowed Job tilehouse-backfill-\n');
    expect(judged.status).toBe(0);
  });

  it('admits the Indexed Job that tilehouse k8s --backfill prints', async () => {
    const judged = judge(await printedBackfillJob());
    expect(judged.stdout).toBe('allowed Job tilehouse-backfill-daily-incidents-by-se-\n');
    expect(judged.status).toBe(0);
  });

  it('admits what tilehouse k8s generates with a local CSV directory (an extra emptyDir volume and mount)', async () => {
    const config = path.join(scratch.path, 'local.yaml');
    await writeFile(config, (await readFile('config/production.example.yaml', 'utf8')).replace(/directory: gs:\/\/.*/, 'directory: /var/lib/tilehouse/out'));
    const outFile = path.join(scratch.path, 'base', 'cronjobs.yaml');
    const written = await runCli(['k8s', '--config', config, '--jobs', 'jobs', '--out', outFile], { env: {} });
    expect(written.exitCode).toBe(0);
    const cronJobs = await readFile(outFile, 'utf8');
    expect(cronJobs).toContain('mountPath: /var/lib/tilehouse/out');
    const judged = judge(`${cronJobs}\n---\n${await readFile(path.join(scratch.path, 'base', 'backfill-job.yaml'), 'utf8')}`);
    expect(judged.stdout).not.toMatch(/^refused/m);
    expect(judged.stdout.match(/^allowed /gm)).toHaveLength(6);
    expect(judged.status).toBe(0);
  });

  it.each([
    [
      'allowPrivilegeEscalation: false',
      'allowPrivilegeEscalation: true',
      /^refused Job tilehouse-backfill-: allowPrivilegeEscalation != false \(.*securityContext\.allowPrivilegeEscalation=false/m,
    ],
    [
      'runAsNonRoot: true',
      'runAsNonRoot: false',
      /^refused Job tilehouse-backfill-: runAsNonRoot != true \(pod must not set securityContext\.runAsNonRoot=false\)$/m,
    ],
    ['type: RuntimeDefault', 'type: Unconfined', /^refused Job tilehouse-backfill-: seccompProfile \(.*seccompProfile\.type to "Unconfined"/m],
    ['- ALL', '- NET_RAW', /^refused Job tilehouse-backfill-: unrestricted capabilities \(.*securityContext\.capabilities\.drop=\["ALL"\]/m],
  ])('refuses a template with %s changed to %s, naming the field', (from, to, refusal) => {
    expect(backfillTemplate).toContain(from);
    const judged = judge(backfillTemplate.replace(from, to));
    expect(judged.stdout).toMatch(refusal);
    expect(judged.status).toBe(1);
  });

  it('refuses a hostPath volume, naming the volume', () => {
    const withHostPath = backfillTemplate.replace(/^( +)volumes:\n/m, '$1volumes:\n$1  - name: host\n$1    hostPath:\n$1      path: /var/run\n');
    expect(withHostPath).not.toBe(backfillTemplate);
    const judged = judge(withHostPath);
    expect(judged.stdout).toMatch(/^refused Job tilehouse-backfill-: restricted volume types \(volume "host" uses restricted volume type "hostPath"\)$/m);
    expect(judged.status).toBe(1);
  });

  it('still admits what restricted allows: adding NET_BIND_SERVICE, a Localhost seccomp profile', () => {
    const unusual = backfillTemplate
      .replace(/^( +)drop:\n( +)- ALL\n/m, '$1drop:\n$2- ALL\n$1add:\n$2- NET_BIND_SERVICE\n')
      .replace(/^( +)type: RuntimeDefault\n/m, '$1type: Localhost\n$1localhostProfile: profiles/tilehouse.json\n');
    expect(unusual).toContain('NET_BIND_SERVICE');
    expect(unusual).toContain('localhostProfile');
    const judged = judge(unusual);
    expect(judged.stdout).toBe('allowed Job tilehouse-backfill-\n');
    expect(judged.status).toBe(0);
  });

  it('fails on input with no pod template, so that judging nothing never passes', async () => {
    const judged = judge(await readFile('examples/k8s-demo/namespace.yaml', 'utf8'));
    expect(judged.stdout).toBe('');
    expect(judged.stderr).toMatch(/no pod template found/);
    expect(judged.status).toBe(1);
  });
});
