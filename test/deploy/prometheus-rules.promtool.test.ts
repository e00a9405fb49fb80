import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { promtool, promtoolBinaryOrSkip } from './promtool.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';
import { describeUnless, missing } from '../support/skip.js';

interface RuleGroups {
  groups: Array<{ name: string; rules: Array<Record<string, unknown>> }>;
}

/** The rule groups of the PrometheusRule CRD (its `spec`), as the plain rules file promtool reads. */
async function ruleGroups(): Promise<RuleGroups> {
  const document = parse(await readFile('k8s/prometheus-rules.yaml', 'utf8')) as { kind: string; spec: RuleGroups };
  expect(document.kind).toBe('PrometheusRule');
  return document.spec;
}

const binary = promtoolBinaryOrSkip();
if (binary === null)
  console.warn(
    '[tilehouse] promtool-check-rules not found; the promtool checks of k8s/prometheus-rules.yaml are skipped. Install it with `npm run setup:promtool`.',
  );

/** What `promtool check rules` checks (scripts/promtool/main.go): YAML fields, PromQL, templates, durations. */
describeUnless(missing('promtool-check-rules', binary))('k8s/prometheus-rules.yaml under promtool check rules', () => {
  const dir = tempDirForAll();

  async function check(groups: RuleGroups) {
    await writeFile(path.join(dir.path, 'rules.yaml'), stringify(groups));
    return promtool(binary!, ['rules.yaml'], dir.path);
  }

  it('accepts every rule of the CRD', async () => {
    const result = await check(await ruleGroups());
    expect(result.output).toMatch(/SUCCESS: 5 rules found/);
    expect(result.exitCode, result.output).toBe(0);
  });

  it('rejects a broken expression (so the check above can fail)', async () => {
    const groups = await ruleGroups();
    const rule = groups.groups[1]!.rules[0]!;
    // A closing parenthesis lost in an edit: the kind of slip the name-only checks cannot see.
    const broken = String(rule.expr).replace(/\)\s*>/, ' >');
    expect(broken).not.toBe(rule.expr);
    rule.expr = broken;
    const result = await check(groups);
    expect(result.exitCode).toBe(1);
    expect(result.output).toMatch(/FAILED/);
    expect(result.output).toMatch(/parse error/);
    expect(result.output).not.toMatch(/SUCCESS/);
  });

  it('rejects PromQL that names only known metrics and balances its parentheses, but is wrong', async () => {
    const groups = await ruleGroups();
    // rate() needs a range vector: the name and bracket checks of prometheus-rules.test.ts pass this.
    groups.groups[1]!.rules[1]!.expr = 'rate(tilehouse_last_run_success) == 0';
    const result = await check(groups);
    expect(result.exitCode).toBe(1);
    expect(result.output).toMatch(/range vector/);
  });

  it('rejects an annotation template that does not parse, and a misspelt field', async () => {
    const badTemplate = await ruleGroups();
    (badTemplate.groups[0]!.rules[0]!.annotations as Record<string, string>).summary = '{{ $labels.cronjob: no successful Job';
    expect((await check(badTemplate)).exitCode).toBe(1);
    const misspelt = await ruleGroups();
    misspelt.groups[0]!.rules[0]!.labelz = { severity: 'warning' };
    const result = await check(misspelt);
    expect(result.exitCode).toBe(1);
    expect(result.output).toMatch(/labelz/);
  });
});
