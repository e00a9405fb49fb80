import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { METRICS } from '../../src/metrics/push-metrics.js';

/**
 * The metrics the rules may use, with their labels: kube-state-metrics' CronJob and Job metrics as
 * its docs list them (docs/metrics/workload/cronjob-metrics.md, job-metrics.md, v2.x), and what
 * tilehouse pushes (src/metrics/push-metrics.ts; the Pushgateway adds `job` and `instance`).
 */
const KUBE_STATE_METRICS: Record<string, readonly string[]> = {
  kube_cronjob_status_last_successful_time: ['namespace', 'cronjob'],
  kube_cronjob_status_last_schedule_time: ['namespace', 'cronjob'],
  kube_cronjob_next_schedule_time: ['namespace', 'cronjob'],
  kube_cronjob_status_active: ['namespace', 'cronjob'],
  kube_cronjob_spec_suspend: ['namespace', 'cronjob'],
  kube_job_status_start_time: ['namespace', 'job_name'],
  kube_job_status_completion_time: ['namespace', 'job_name'],
  kube_job_status_failed: ['namespace', 'job_name', 'reason'],
  kube_job_status_succeeded: ['namespace', 'job_name'],
  kube_job_failed: ['namespace', 'job_name', 'condition'],
  kube_job_complete: ['namespace', 'job_name', 'condition'],
  kube_job_owner: ['namespace', 'job_name', 'owner_kind', 'owner_name', 'owner_is_controller'],
};
const PUSHED: Record<string, readonly string[]> = Object.fromEntries(Object.values(METRICS).map((name) => [name, ['job', 'instance']]));
const KNOWN: Record<string, readonly string[]> = { ...KUBE_STATE_METRICS, ...PUSHED };
const PROMQL_WORDS = new Set(['time', 'max', 'min', 'sum', 'by', 'on', 'and', 'or', 'unless', 'group_left', 'group_right', 'ignoring', 'absent']);

interface Rule {
  alert: string;
  expr: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

async function rules(): Promise<Rule[]> {
  const document = parse(await readFile('k8s/prometheus-rules.yaml', 'utf8')) as {
    apiVersion: string;
    kind: string;
    spec: { groups: Array<{ name: string; rules: Rule[] }> };
  };
  expect(document).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
  return document.spec.groups.flatMap((group) => group.rules);
}

/** The expression without quoted strings (label values like "tilehouse-.+" hold no names). */
const withoutStrings = (expr: string) => expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');

describe('k8s/prometheus-rules.yaml', () => {
  it('has the alerts the issue asks for, on kube-state-metrics and on the pushed last-success metric', async () => {
    const byName = new Map((await rules()).map((rule) => [rule.alert, rule]));
    expect([...byName.keys()].sort()).toEqual([
      'TilehouseCronJobLastJobFailed',
      'TilehouseCronJobNoRecentSuccess',
      'TilehouseLastRunFailed',
      'TilehouseNoRecentSuccess',
      'TilehousePublishGuardTripped',
    ]);
    expect(byName.get('TilehousePublishGuardTripped')!.expr).toContain(METRICS.guardTripped);
    expect(byName.get('TilehouseNoRecentSuccess')!.expr).toContain(METRICS.lastSuccess);
    expect(byName.get('TilehouseNoRecentSuccess')!.expr).toContain(METRICS.scheduleInterval);
    expect(byName.get('TilehouseCronJobNoRecentSuccess')!.expr).toContain('kube_cronjob_status_last_successful_time');
    for (const rule of byName.values()) {
      expect(rule.labels?.severity).toMatch(/^(warning|critical)$/);
      expect(rule.annotations?.summary).toBeTruthy();
    }
  });

  it('names only metrics that exist, and no word PromQL or those metrics would not know', async () => {
    for (const rule of await rules()) {
      const expr = withoutStrings(rule.expr);
      const names = [...expr.matchAll(/\b(?:kube|tilehouse)_[a-z_]+\b/g)].map((match) => match[0]);
      expect(names.length, rule.alert).toBeGreaterThan(0);
      for (const name of names) expect(Object.keys(KNOWN), `${rule.alert}: ${name}`).toContain(name);
      const labels = new Set(names.flatMap((name) => KNOWN[name]!));
      for (const word of expr.match(/\b[a-z_][a-z0-9_]*\b/gi) ?? []) {
        if (KNOWN[word] !== undefined || PROMQL_WORDS.has(word) || /^\d/.test(word)) continue;
        expect([...labels], `${rule.alert}: "${word}" is neither PromQL, a metric nor a label of the metrics used`).toContain(word);
      }
    }
  });

  it('has balanced parentheses and braces in every expression', async () => {
    for (const rule of await rules()) {
      let depth = 0;
      for (const char of withoutStrings(rule.expr)) {
        if (char === '(' || char === '{') depth += 1;
        if (char === ')' || char === '}') depth -= 1;
        expect(depth, rule.alert).toBeGreaterThanOrEqual(0);
      }
      expect(depth, rule.alert).toBe(0);
    }
  });
});
