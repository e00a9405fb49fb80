import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { shardOf } from '../../src/cli/orchestration-flags.js';
import { splitWindows } from '../../src/pipeline/windows/date-windows.js';
import { shareOf } from '../../src/pipeline/windows/shard-windows.js';
import { runCli, refusalCode } from '../support/cli-harness.js';

type Manifest = Record<string, any>;

const render = (args: string[]) =>
  runCli(['k8s', '--config', 'config/production.example.yaml', '--jobs', 'jobs', '--backfill', 'daily_incidents_by_severity', ...args], { env: {} });

function documents(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((document) => document.toJS() as Manifest)
    .filter((document) => document !== null);
}

describe('tilehouse k8s --backfill (an Indexed Job)', () => {
  it('prints one Indexed Job whose pods together run every window exactly once', async () => {
    const result = await render(['--from', '2026-01-01', '--to', '2026-02-15', '--step', 'week', '--completions', '4', '--parallelism', '3']);
    expect(result.exitCode).toBe(0);
    const [job, ...rest] = documents(result.stdout);
    expect(rest).toEqual([]);
    expect(job).toMatchObject({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { namespace: 'tilehouse', generateName: expect.stringMatching(/^tilehouse-backfill-daily-incidents-by-[a-z-]*-$/) },
      spec: { completionMode: 'Indexed', completions: 4, parallelism: 3, backoffLimitPerIndex: 2, ttlSecondsAfterFinished: 604_800 },
    });
    const container = job!.spec.template.spec.containers[0];
    expect(container.args).toEqual(['backfill', '--job', 'daily_incidents_by_severity', '--from', '2026-01-01', '--to', '2026-02-15', '--step', 'week']);
    const env = new Map<string, Manifest>(container.env.map((entry: Manifest) => [entry.name, entry]));
    expect(env.get('TILEHOUSE_RUN_ID')).toEqual({
      name: 'TILEHOUSE_RUN_ID',
      valueFrom: { fieldRef: { fieldPath: "metadata.labels['batch.kubernetes.io/job-name']" } },
    });
    // One trace for the whole backfill: every pod's run is a child of the same (sampled) parent,
    // a fresh one per printed Job; and each pod names itself through the downward API.
    expect(env.get('TRACEPARENT')?.value).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const another = documents((await render(['--from', '2026-01-01', '--to', '2026-02-15', '--step', 'week'])).stdout)[0]!;
    const anotherEnv = another.spec.template.spec.containers[0].env as Manifest[];
    expect(anotherEnv.find((entry) => entry.name === 'TRACEPARENT')?.value).not.toBe(env.get('TRACEPARENT')?.value);
    expect(env.get('K8S_POD_NAME')).toEqual({ name: 'K8S_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } });
    expect(env.get('K8S_NAMESPACE_NAME')).toEqual({ name: 'K8S_NAMESPACE_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });
    expect(env.get('K8S_NODE_NAME')).toEqual({ name: 'K8S_NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } });
    // What each pod does with what Kubernetes gives it: $JOB_COMPLETION_INDEX, and the count the Job carries.
    const windows = splitWindows('2026-01-01', '2026-02-15', 'week');
    const ran = Array.from({ length: job!.spec.completions as number }, (_, index) => {
      const shard = shardOf('backfill', {}, { JOB_COMPLETION_INDEX: String(index), TILEHOUSE_SHARD_COUNT: env.get('TILEHOUSE_SHARD_COUNT')!.value })!;
      return shareOf(windows, shard);
    });
    expect(ran.flat()).toEqual(windows);
    expect(ran.every((share) => share.length > 0)).toBe(true);
  });

  it('defaults to one pod per window, two at a time, and refuses more pods than windows (exit 2)', async () => {
    const defaults = documents((await render(['--from', '2026-01-01', '--to', '2026-01-04'])).stdout)[0]!;
    expect(defaults.spec).toMatchObject({ completions: 3, parallelism: 2 });
    const tooMany = await render(['--from', '2026-01-01', '--to', '2026-01-04', '--completions', '4']);
    expect(tooMany.exitCode).toBe(2);
    expect(refusalCode(tooMany)).toBe('usage_invalid');
    expect(tooMany.stderr).toMatch(/--completions must be a whole number from 1 to 3/);
    const resuming = documents((await render(['--from', '2026-01-01', '--to', '2026-01-04', '--resume'])).stdout)[0]!;
    expect(resuming.spec.template.spec.containers[0].args.at(-1)).toBe('--resume');
    const stray = await runCli(['k8s', '--config', 'config/production.example.yaml', '--jobs', 'jobs', '--parallelism', '2'], { env: {} });
    expect(stray.exitCode).toBe(2);
    expect(refusalCode(stray)).toBe('usage_invalid');
  });

  it('every Job template of the demo base says when its Job is removed (ttlSecondsAfterFinished)', async () => {
    const templates = [
      ...documents(await readFile('examples/k8s-demo/cronjobs.yaml', 'utf8')).map((cronJob) => cronJob.spec.jobTemplate.spec),
      ...documents(await readFile('examples/k8s-demo/backfill-job.yaml', 'utf8')).map((job) => job.spec),
    ];
    expect(templates.length).toBeGreaterThan(1);
    for (const spec of templates) expect(spec.ttlSecondsAfterFinished).toBeGreaterThanOrEqual(24 * 3600);
  });
});
