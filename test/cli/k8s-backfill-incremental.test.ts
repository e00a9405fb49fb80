import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { listFiles, runCli, sandboxEnv, summaryOf, writeWorkspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { dailyIncrementalJob, dailySourceRows, daySandboxesForAll } from '../support/day-sandboxes.js';
import path from 'node:path';

type Manifest = Record<string, any>;

const days = daySandboxesForAll();

// An incremental job has no backfill: section; `tilehouse backfill` windows it by its incremental
// item, so the Job `k8s --backfill` prints for it must run there too.
describe('tilehouse k8s --backfill of an incremental job', () => {
  it('prints an Indexed Job whose pods, run as Kubernetes runs them, backfill every window', async () => {
    const sandbox = await days.at('2026-07-10');
    const workspace = await writeWorkspace(days.root, sandbox, [dailyIncrementalJob({ type: 'csv', manifest: true })]);
    const printed = await runCli(
      [
        'k8s',
        '--config',
        workspace.configFile,
        '--jobs',
        workspace.jobsDir,
        '--backfill',
        'daily',
        '--from',
        '2026-07-01',
        '--to',
        '2026-07-05',
        '--completions',
        '2',
      ],
      { env: {} },
    );
    expect(printed.exitCode).toBe(0);
    // Only the warnings any local CSV workspace gets (its files and history would die with the pod).
    expect(printed.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^tilehouse k8s: warning: daily write CSV under .*: in the pod that is an emptyDir/),
      expect.stringMatching(/^tilehouse k8s: warning: history\.location in env\.yaml is the local directory/),
    ]);
    const [job, ...rest] = parseAllDocuments(printed.stdout)
      .map((document) => document.toJS() as Manifest)
      .filter((document) => document !== null);
    expect(rest).toEqual([]);
    expect(job!.spec).toMatchObject({ completionMode: 'Indexed', completions: 2, parallelism: 2 });
    const container = job!.spec.template.spec.containers[0] as Manifest;
    expect(container.args).toEqual(['backfill', '--job', 'daily', '--from', '2026-07-01', '--to', '2026-07-05', '--step', 'day']);

    // Each pod as Kubernetes starts it: the Job's literal env, the ConfigMaps' files where its
    // TILEHOUSE_CONFIG and TILEHOUSE_JOBS point, its completion index and the Job's name as run id.
    const literal = Object.fromEntries(
      (container.env as Manifest[])
        .filter((entry) => typeof entry.value === 'string' && !['NODE_OPTIONS', 'TRACEPARENT'].includes(entry.name))
        .map((entry) => [entry.name as string, entry.value as string]),
    );
    expect(Object.keys(literal).sort()).toEqual(['TILEHOUSE_CONFIG', 'TILEHOUSE_JOBS', 'TILEHOUSE_SHARD_COUNT']);
    const runs = [];
    for (const index of [0, 1]) {
      const result = await runCli([...(container.args as string[]), '--json'], {
        env: {
          ...literal,
          ...sandboxEnv(sandbox),
          TILEHOUSE_CONFIG: workspace.configFile,
          TILEHOUSE_JOBS: workspace.jobsDir,
          JOB_COMPLETION_INDEX: String(index),
          TILEHOUSE_RUN_ID: 'tilehouse-backfill-daily-x7k2p',
        },
      });
      expect(result.exitCode).toBe(0);
      expect(result.stderr).toMatch(
        new RegExp(`^backfill daily 2026-07-01\\.\\.2026-07-05 by day \\(shard ${index} of 2: 2 of 4 windows\\): 2 of 2 windows succeeded, \\d+ rows\\n`),
      );
      const summary = summaryOf(result.stdout, 'backfill');
      expect(summary).toMatchObject({ job: 'daily', runId: 'tilehouse-backfill-daily-x7k2p', failed: [], shard: { index, count: 2, windows: 4 } });
      runs.push(summary);
    }
    expect(runs.map((run) => run.windows.map((window) => window.window.from))).toEqual([
      ['2026-07-01', '2026-07-02'],
      ['2026-07-03', '2026-07-04'],
    ]);
    const dates = ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04'];
    expect((await listFiles(workspace.outDir)).filter((file) => file.endsWith('.csv'))).toEqual(dates.map((day) => `daily/${day}.csv`));
    for (const day of dates) {
      const next = `2026-07-0${Number(day.slice(-1)) + 1}`;
      expect((await readCsv(path.join(workspace.outDir, 'daily', `${day}.csv`))).rows).toEqual(dailySourceRows(sandbox, day, next));
    }
  });
});
