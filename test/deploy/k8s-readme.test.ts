/**
 * Every command in k8s/README.md's sh blocks, run as written (or, for the ones that need a cluster,
 * checked against what they name), so the examples cannot rot: in a config repository of one's own
 * (jobs/ and config/production.yaml, nothing else), `tilehouse k8s` writes the base, `kubectl
 * apply -k` is rendered by the real kustomize, the backfill examples are rendered and judged. A
 * command the table below does not know fails the test: a new example needs a check.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { jobForBackfill } from '../../src/pipeline/windows/windowed-job.js';
import { loadJobs } from '../../src/config/load-config.js';
import { backfillItemIndex } from '../../src/pipeline/windows/run-windows.js';
import { k8sToolOrSkip, runTool, tilehouseIn } from './k8s-tools.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';
import { describeUnless, missing } from '../support/skip.js';

const kustomize = k8sToolOrSkip('kustomize', 'KUSTOMIZE_BIN');
const decoder = k8sToolOrSkip('k8s-decode', 'K8S_DECODE_BIN');
const podSecurity = k8sToolOrSkip('pod-security', 'POD_SECURITY_BIN');
const blocker = missing('kustomize', kustomize) ?? missing('k8s-decode', decoder) ?? missing('pod-security', podSecurity);

type Obj = Record<string, any>;

/** The logical lines of every ```sh block: continuations joined, trailing comments dropped. */
function shellCommands(markdown: string): string[] {
  const commands: string[] = [];
  for (const block of markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const joined = block[1]!.replace(/\\\n\s*/g, '');
    for (const line of joined.split('\n')) {
      const command = line.replace(/\s+#\s.*$/, '').trim();
      if (command !== '' && !command.startsWith('#')) commands.push(command);
    }
  }
  return commands;
}

const documents = (text: string): Obj[] =>
  parseAllDocuments(text)
    .map((document) => document.toJS() as Obj)
    .filter((object) => object !== null);

describeUnless(blocker)('k8s/README.md, as written', () => {
  const repo = tempDirForAll('tilehouse-config-repo-');
  let commands: string[];
  let rendered: Obj[] | undefined;
  beforeAll(async () => {
    commands = shellCommands(await readFile('k8s/README.md', 'utf8'));
    await cp('jobs', path.join(repo.path, 'jobs'), { recursive: true });
    await mkdir(path.join(repo.path, 'config'));
    await cp('config/production.example.yaml', path.join(repo.path, 'config', 'production.yaml'));
  });

  const namespaceOfBase = async (): Promise<string> => documents(await readFile(path.join(repo.path, 'k8s', 'namespace.yaml'), 'utf8'))[0]!.metadata.name;

  /** Runs one README command; false when no rule knows it. Order matters: the base comes first. */
  async function check(command: string): Promise<boolean> {
    const words = command.split(/\s+/);
    let match: RegExpExecArray | null;
    if ((match = /^tilehouse (k8s --backfill .*?) \| kubectl create -f -$/.exec(command))) {
      const printed = tilehouseIn(repo.path, match[1]!.split(/\s+/));
      expect(printed.stderr).toBe('');
      expect(printed.status).toBe(0);
      const [job] = documents(printed.stdout);
      expect(job!.spec.completionMode).toBe('Indexed');
      expect(runTool(decoder!, [], { input: printed.stdout }).status).toBe(0);
      expect(runTool(podSecurity!, [], { input: printed.stdout }).stdout).toMatch(/^allowed Job /);
      return true;
    }
    if (words[0] === 'tilehouse' && words[1] === 'k8s') {
      const written = tilehouseIn(repo.path, words.slice(1));
      expect(written.stderr).toBe('');
      expect(written.status).toBe(0);
      return true;
    }
    if ((match = /^kubectl apply -k (\S+)$/.exec(command))) {
      const build = runTool(kustomize!, ['build', match[1]!], { cwd: repo.path });
      expect(build.stderr).toBe('');
      expect(build.status).toBe(0);
      rendered = documents(build.stdout);
      expect(rendered.filter((object) => object.kind === 'CronJob')).toHaveLength(5);
      return true;
    }
    if (command === 'kubectl apply -f k8s/namespace.yaml') {
      const decoded = runTool(decoder!, [], { input: await readFile(path.join(repo.path, 'k8s', 'namespace.yaml'), 'utf8') });
      expect(decoded.stdout).toBe('v1 Namespace tilehouse\n');
      return true;
    }
    if ((match = /^kubectl -n tilehouse create job --from=cronjob\/(\S+) \S+$/.exec(command))) {
      expect(rendered, 'the base is rendered before a CronJob is named').toBeDefined();
      expect(rendered!.map((object) => `${object.kind}/${object.metadata.name}`)).toContain(`CronJob/${match[1]}`);
      return true;
    }
    if ((match = /^(sed .* k8s\/backfill-job\.yaml) \| kubectl create -f -$/.exec(command))) {
      const filled = execFileSync('bash', ['-c', match[1]!], { cwd: repo.path, encoding: 'utf8' });
      const [job] = documents(filled);
      const args: string[] = job!.spec.template.spec.containers[0].args;
      expect(args.slice(0, 2)).toEqual(['backfill', '--job']);
      expect(args).toEqual(['backfill', '--job', args[2], '--from', '2024-01-01', '--to', '2024-03-31']);
      // What exited 2 in the pod before: the named job must exist and be fit for a backfill.
      const named = (await loadJobs(path.join(repo.path, 'jobs'))).find((candidate) => candidate.name === args[2]);
      expect(named, `no job ${args[2]} in jobs/`).toBeDefined();
      expect(() => backfillItemIndex(jobForBackfill(named!))).not.toThrow();
      expect(runTool(decoder!, [], { input: filled }).status).toBe(0);
      expect(runTool(podSecurity!, [], { input: filled }).status).toBe(0);
      return true;
    }
    if ((match = /^(\.tools\/bin\/kustomize build k8s\/ \| \.tools\/bin\/(?:k8s-decode|pod-security))$/.exec(command))) {
      // Run in this clone, where .tools/bin is: its k8s/ renders nothing, which the decoder accepts
      // and the evaluator refuses to call a pass (no pod template judged).
      const result = (() => {
        try {
          return { status: 0, out: execFileSync('bash', ['-o', 'pipefail', '-c', match![1]!], { encoding: 'utf8', stdio: 'pipe' }) };
        } catch (error) {
          return { status: (error as { status: number }).status, out: '' };
        }
      })();
      expect(result.status).toBe(command.endsWith('pod-security') ? 1 : 0);
      return true;
    }
    // Need a cluster or Google Cloud: not run, but what they name must be what the base and the
    // config use (the secret and its keys, the namespace, the accounts, the bucket).
    if ((match = /^kubectl -n (\S+) create secret generic (\S+) --from-literal=([\w-]+)=.+? --from-file=([\w-]+)=\S+$/.exec(command))) {
      const [, namespace, secret, literalKey, fileKey] = match;
      expect(await namespaceOfBase()).toBe(namespace);
      const read = new Set<string>();
      for (const cronJob of documents(await readFile(path.join(repo.path, 'k8s', 'cronjobs.yaml'), 'utf8'))) {
        const pod = cronJob.spec.jobTemplate.spec.template.spec;
        for (const variable of pod.containers.flatMap((container: Obj) => container.env ?? [])) {
          const ref = variable.valueFrom?.secretKeyRef;
          if (ref !== undefined) read.add(`${ref.name}/${ref.key}`);
        }
        for (const volume of pod.volumes ?? []) for (const item of volume.secret?.items ?? []) read.add(`${volume.secret.secretName}/${item.key}`);
      }
      expect([...read].sort()).toEqual([`${secret}/${literalKey}`, `${secret}/${fileKey}`].sort());
      return true;
    }
    if (
      (match =
        /^gcloud iam service-accounts add-iam-policy-binding (\S+) --role roles\/iam\.workloadIdentityUser --member "serviceAccount:[\w-]+\.svc\.id\.goog\[([^/]+)\/([^\]]+)\]"$/.exec(
          command,
        ))
    ) {
      const [, googleAccount, namespace, account] = match;
      const [serviceAccount] = documents(await readFile(path.join(repo.path, 'k8s', 'serviceaccount.yaml'), 'utf8'));
      expect(serviceAccount!.metadata.annotations['iam.gke.io/gcp-service-account']).toBe(googleAccount);
      expect(serviceAccount!.metadata.name).toBe(account);
      expect(await namespaceOfBase()).toBe(namespace);
      return true;
    }
    if (
      (match = /^gcloud storage buckets add-iam-policy-binding gs:\/\/([^/\s]+) --role roles\/storage\.objectUser --member "serviceAccount:(\S+)"$/.exec(
        command,
      ))
    ) {
      const [, bucket, googleAccount] = match;
      const config = parse(await readFile(path.join(repo.path, 'config', 'production.yaml'), 'utf8')) as Obj;
      expect(config.sinks.csv.directory).toMatch(new RegExp(`^gs://${bucket}/`));
      const [serviceAccount] = documents(await readFile(path.join(repo.path, 'k8s', 'serviceaccount.yaml'), 'utf8'));
      expect(serviceAccount!.metadata.annotations['iam.gke.io/gcp-service-account']).toBe(googleAccount);
      return true;
    }
    return false;
  }

  it('runs every command of its sh blocks, in order, and knows each one', async () => {
    expect(commands.length).toBeGreaterThan(8);
    const unknown: string[] = [];
    for (const command of commands) if (!(await check(command))) unknown.push(command);
    expect(unknown).toEqual([]);
    // The two backfill examples and the base were all exercised.
    expect(commands.filter((command) => command.includes('backfill'))).toHaveLength(2);
    expect(rendered).toBeDefined();
  });

  it('states the memory of the manifests (src/deploy/deploy-settings.ts)', async () => {
    const { RESOURCES } = await import('../../src/deploy/deploy-settings.js');
    expect(await readFile('k8s/README.md', 'utf8')).toContain(`Memory ${RESOURCES.requests.memory} request / ${RESOURCES.limits.memory} limit`);
  });
});
