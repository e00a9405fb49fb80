import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { runJobs } from '../../src/pipeline/run-jobs.js';
import type { JobRunSummary } from '../../src/pipeline/job-summary.js';
import { Scheduler } from '../../src/schedule/scheduler.js';
import { buildSinks } from '../../src/sinks/build-sinks.js';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { Capture, FAST_RETRY, listFiles, writeWorkspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { detailQuery } from '../support/queries.js';
import { loadForRun } from '../support/run-jobs-harness.js';
import path from 'node:path';
import { sandboxAndRootForAll } from '../support/sandbox-fixture.js';
import { waitUntil } from '../support/wait-until.js';

const INCIDENTS = 240;

const fixture = sandboxAndRootForAll({ incidents: INCIDENTS, latencyMs: 200 });

beforeAll(async () => {
  // 12 pages at 200 ms, one at a time: a run takes over 2 s, so whatever the phase of the ticks,
  // some run of the every-2-seconds job starts (and sweeps) while the other job is writing.
});

describe('the scheduler with two jobs writing into one CSV directory', () => {
  it('runs both on their crons until each has finished two runs, with no failed run and no ENOENT, and leaves no temp file', async () => {
    const jobs = [
      // Its sweep is not recursive; the other's is, so it looks into this job's files too.
      { name: 'every_second', tile: SANDBOX_TILE, query: detailQuery, schedule: { cron: '* * * * * *' }, sinks: [{ type: 'csv', path: '{name}.csv' }] },
      { name: 'every_two', tile: SANDBOX_TILE, query: detailQuery, schedule: { cron: '*/2 * * * * *' }, sinks: [{ type: 'csv', path: '{name}/{date}.csv' }] },
    ];
    const workspace = await writeWorkspace(fixture.root, fixture.sandbox, jobs, { itemsPerPage: 20, concurrency: 1 });
    const loaded = await loadForRun(workspace, fixture.sandbox);
    const sinks = new Map(await Promise.all(loaded.jobs.map(async (job) => [job.name, await buildSinks(job, loaded.environment)] as const)));
    const logs = new Capture();
    const logger = await createLogger({ level: 'info', destination: logs });
    const summaries: JobRunSummary[] = [];
    const scheduler = new Scheduler(
      loaded.jobs,
      async (job, signal) => {
        const summary = await runJobs([job], {
          environment: loaded.environment,
          credentials: loaded.credentials,
          logger,
          buildSinks: () => sinks.get(job.name)!,
          retry: FAST_RETRY,
          signal,
        });
        return summary.tiles[0];
      },
      logger,
      { finished: (_job, summary) => summary && summaries.push(summary) },
    );
    scheduler.start();
    // Until each job has finished twice, not a fixed time: on a busy machine a run takes longer
    // than its 12 pages' 2.4 s of latency, and 8 s could hold a single run of each. Two runs of
    // each at a few seconds apiece: the deadline only stops a scheduler that runs nothing.
    const finished = (job: string) => summaries.filter((summary) => summary.job === job).length;
    await waitUntil(() => finished('every_second') >= 2 && finished('every_two') >= 2, 'two finished runs of each job', { withinMs: 60_000, everyMs: 100 });
    // Generous grace: every started run finishes, so each one is judged on its own outcome.
    expect(await scheduler.stop(15_000)).toBe(true);

    const failed = summaries.filter((summary) => summary.status !== 'succeeded');
    expect(failed.map((summary) => `${summary.job}: ${summary.error?.code}: ${summary.error?.message}`)).toEqual([]);
    expect(summaries.filter((s) => s.job === 'every_second').length).toBeGreaterThanOrEqual(2);
    expect(summaries.filter((s) => s.job === 'every_two').length).toBeGreaterThanOrEqual(2);
    expect(logs.text).not.toContain('ENOENT');
    expect(logs.text).not.toMatch(/removed \d+ temp file/);

    const files = await listFiles(workspace.outDir);
    expect(files.filter((name) => path.basename(name).startsWith('.'))).toEqual([]);
    expect(files).toContain('every_second.csv');
    for (const file of files) expect((await readCsv(path.join(workspace.outDir, file))).rows).toHaveLength(INCIDENTS);
  }, 90_000);
});
