import path from 'node:path';
import type { Reporter, SerializedError, TestModule, TestRunEndReason, TestSpecification, Vitest } from 'vitest/node';
import { underCi } from './ci.js';

/** A skipped test or an empty skipped block, where it is and why (undefined: it says not). */
export interface SkippedTest {
  where: string;
  reason: string | undefined;
}

/** Every skip of a run: tests skipped (at collection or by `context.skip`) and empty skipped blocks. */
export function skippedTests(modules: ReadonlyArray<TestModule>, root: string): SkippedTest[] {
  const skipped: SkippedTest[] = [];
  for (const module of modules) {
    const file = path.relative(root, module.moduleId);
    for (const test of module.children.allTests()) {
      const result = test.result();
      if (result.state !== 'skipped') continue;
      skipped.push({ where: `${file} > ${test.fullName}`, reason: test.meta().skipReason ?? result.note });
    }
    for (const suite of module.children.allSuites()) {
      if (suite.children.size > 0 || suite.options.mode !== 'skip') continue;
      skipped.push({ where: `${file} > ${suite.fullName}`, reason: suite.meta().skipReason });
    }
  }
  return skipped;
}

/**
 * What is wrong with the skips of a run, one line each (empty: nothing). A skip must say why
 * (test/support/skip.ts), unless the run was filtered by name or line (`-t`, `file:line`), where
 * vitest skips every other test without a reason; under CI no skip is allowed at all, with or
 * without one: a machine that cannot run a test fails the build rather than passing it unrun.
 */
export function skipProblems(skipped: SkippedTest[], options: { ci: boolean; filtered: boolean }): string[] {
  const problems: string[] = [];
  for (const skip of skipped) {
    if (skip.reason === undefined) {
      if (!options.filtered) problems.push(`skipped without a reason (use describeUnless/itUnless or context.skip(reason)): ${skip.where}`);
    } else if (options.ci) {
      problems.push(`skipped under CI: ${skip.where}: ${skip.reason}`);
    }
  }
  return problems;
}

/**
 * Lists the run's skips with their reasons and fails the run (exit code 1) on a skip without a
 * reason or any skip under CI. In vitest.config.ts beside the default reporter.
 */
export default class SkipReporter implements Reporter {
  private root = process.cwd();
  private filtered = false;

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root;
    this.filtered = Boolean(vitest.config.testNamePattern);
  }

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    if (specifications.some((spec) => spec.testLines?.length || spec.testIds?.length || spec.testNamePattern)) this.filtered = true;
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, _errors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    if (reason === 'interrupted') return;
    const skipped = skippedTests(modules, this.root);
    const withReason = skipped.filter((skip) => skip.reason !== undefined);
    if (withReason.length > 0) {
      console.warn(`[tilehouse] ${withReason.length} skipped here:\n${withReason.map((skip) => `  ${skip.where}: ${skip.reason}`).join('\n')}`);
    }
    const problems = skipProblems(skipped, { ci: underCi(), filtered: this.filtered });
    if (problems.length === 0) return;
    console.error(`[tilehouse] the run fails on its skips:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
    process.exitCode = 1;
  }
}
