import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE, type Sandbox } from '../../../sandbox/index.js';
import { ConfigError } from '../../../src/config/config-error.js';
import type { LoadedJob } from '../../../src/config/load-config.js';
import { incrementalPlanOf, runCatchUp, type CatchUpContext } from '../../../src/pipeline/windows/catch-up.js';
import { jobForRun } from '../../../src/pipeline/windows/windowed-job.js';
import type { WindowMetrics } from '../../../src/pipeline/windows/window-batch.js';
import { WindowStateUnreadableError, type WindowStateReader } from '../../../src/sinks/registry.js';
import type { SinkRunContext, SinkWriter } from '../../../src/sinks/sink.js';
import { calendarDateIn } from '../../../src/transform/index.js';
import { FAST_RETRY, writeWorkspace } from '../../support/cli-harness.js';
import { FakeSink, silentLogger } from '../../support/fake-sinks.js';
import { incidentDaysQuery } from '../../support/queries.js';
import { loadForRun } from '../../support/run-jobs-harness.js';
import { sandboxesEachTest } from '../../support/sandbox-fixture.js';

// The source's today is 2026-07-05 (the sandbox's clock, sent as its token answer's Date); this
// machine's clock is whatever it is, months away, so a window placed by the wrong clock shows.
const SOURCE_NOW = new Date('2026-07-05T12:00:00Z');

/** A fake target holding `done` closed and `open` published while open. */
const holding = (target: string, done: readonly string[], open: readonly string[] = []): WindowStateReader => ({
  target,
  heldWindows: async () => ({ done: new Set(done), open: new Set(open) }),
});

/** A sink that records the windows it is opened for and fails to open the ones in `failing`. */
class WindowSink extends FakeSink {
  readonly windows: Array<{ from: string; open: boolean }> = [];
  constructor(private readonly failing: readonly string[] = []) {
    super('out/{date}.csv', 0, []);
  }
  override async open(context: SinkRunContext): Promise<SinkWriter> {
    const window = context.window!;
    this.windows.push({ from: window.from, open: window.open === true });
    if (this.failing.includes(window.from)) throw new Error(`cannot open ${window.from}`);
    return super.open(context);
  }
}

const each = sandboxesEachTest();

interface Setup {
  sandbox: Sandbox;
  job: LoadedJob;
  context: (readers: readonly WindowStateReader[], extra?: Partial<CatchUpContext>) => CatchUpContext;
  pushes: unknown[][];
}

/** A daily incremental job from 2026-07-01 on the sandbox, planned and run from the given readers. */
async function setUp(incremental: Record<string, unknown> = {}, source: Record<string, unknown> = {}): Promise<Setup> {
  const sandbox = await each.sandbox({ incidents: 500, now: SOURCE_NOW });
  const root = await each.tempDir();
  const workspace = await writeWorkspace(
    root,
    sandbox,
    [
      {
        name: 'daily',
        tile: SANDBOX_TILE,
        query: incidentDaysQuery,
        sinks: [{ type: 'csv', path: '{date}.csv', manifest: true }],
        incremental: { item: 'day', bucketColumn: 'Day', startFrom: '2026-07-01', lookbackDays: 0, ...incremental },
      },
    ],
    source,
  );
  const loaded = await loadForRun(workspace, sandbox);
  const pushes: unknown[][] = [];
  const metrics: WindowMetrics = { pushWindowRun: async (...args) => void pushes.push(args) };
  const context = (readers: readonly WindowStateReader[], extra: Partial<CatchUpContext> = {}): CatchUpContext => ({
    environment: loaded.environment,
    credentials: loaded.credentials,
    configFile: loaded.configFile,
    logger: silentLogger,
    retry: FAST_RETRY,
    metrics,
    fixFlags: ['--config', 'c.yaml'],
    stateReaders: async () => [...readers],
    ...extra,
  });
  return { sandbox, job: jobForRun(loaded.selected[0]!), context, pushes };
}

const exportRequests = (sandbox: Sandbox) => sandbox.requests.filter((request) => request.endpoint === 'export').length;
const froms = (windows: ReadonlyArray<{ from: string }>) => windows.map((window) => window.from);

describe('runCatchUp', () => {
  it("exports each day the targets lack up to the source's today, oldest first, today's recorded open; one metrics push for the run", async () => {
    const { job, context, pushes } = await setUp();
    const sink = new WindowSink();
    const { tiles, report } = await runCatchUp(job, [sink], 'run-1', context([holding('out/{date}.csv', ['2026-07-01', '2026-07-02'])]));
    expect(sink.windows).toEqual([
      { from: '2026-07-03', open: false },
      { from: '2026-07-04', open: false },
      { from: '2026-07-05', open: true },
    ]);
    expect(report).toMatchObject({ today: '2026-07-05', firstUnpublished: '2026-07-03', firstRun: false, failed: [], left: [], clock: { basis: 'source' } });
    expect(report.reason).toBe('3 windows 2026-07-03..2026-07-06: resume after 2026-07-02 (the last day every target holds)');
    expect(froms(report.open)).toEqual(['2026-07-05']);
    expect(tiles.map((tile) => [tile.runId, tile.status])).toEqual([
      ['run-1-20260703', 'succeeded'],
      ['run-1-20260704', 'succeeded'],
      ['run-1-20260705', 'succeeded'],
    ]);
    // Pushed once, as one run of the job to the schedule's group: not once per window, not to the backfills' group.
    expect(pushes).toHaveLength(1);
    expect(pushes[0]!.slice(0, 2)).toEqual(['daily', tiles]);
    expect(pushes[0]![4]).toBeUndefined();
  });

  it('exports again a day the targets hold only open, and starts at startFrom on a first run', async () => {
    const { job, context } = await setUp();
    const reopened = await runCatchUp(job, [new WindowSink()], 'run-1', context([holding('t', ['2026-07-01', '2026-07-02', '2026-07-03'], ['2026-07-04'])]));
    expect(froms(reopened.report.windows)).toEqual(['2026-07-04', '2026-07-05']);
    expect(reopened.report.reason).toContain('2026-07-04 published while open: exported again');
    const first = await runCatchUp(job, [new WindowSink()], 'run-2', context([holding('t', [])]));
    expect(first.report).toMatchObject({ firstRun: true, firstUnpublished: '2026-07-01' });
    expect(froms(first.report.windows)).toEqual(['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05']);
  });

  it("places the days on this machine's clock with source.clock: local, capped at maxWindows with the rest left", async () => {
    const { job, context } = await setUp({ maxWindows: 2 }, { clock: 'local' });
    const { report } = await runCatchUp(
      job,
      [new WindowSink()],
      'run-1',
      context([holding('t', ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05'])]),
    );
    const machineToday = calendarDateIn(new Date(), 'UTC');
    expect(machineToday > '2026-07-06').toBe(true);
    expect(report).toMatchObject({ today: machineToday, clock: { basis: 'local' } });
    expect(froms(report.windows)).toEqual(['2026-07-06', '2026-07-07']);
    expect(report.left[0]!.from).toBe('2026-07-08');
    expect(report.left.at(-1)!.from).toBe(machineToday);
  });

  it('runs the days after a failed one, names it, and the next plan starts again at it', async () => {
    const { job, context } = await setUp();
    const sink = new WindowSink(['2026-07-03']);
    const { tiles, report } = await runCatchUp(job, [sink], 'run-1', context([holding('t', [])]));
    expect(froms(sink.windows)).toEqual(['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05']);
    expect(froms(report.failed)).toEqual(['2026-07-03']);
    expect(tiles.map((tile) => tile.status)).toEqual(['succeeded', 'succeeded', 'failed', 'succeeded', 'succeeded']);
    // What the targets then hold: every day but the failed one (the open today held open).
    const next = await incrementalPlanOf(job, [sink], context([holding('t', ['2026-07-01', '2026-07-02', '2026-07-04'], ['2026-07-05'])]));
    expect(froms(next.windows)).toEqual(['2026-07-03', '2026-07-04', '2026-07-05']);
    expect(next.reason).toContain('resume after 2026-07-02');
  });

  it("runs nothing when a target's state cannot be read: one failed tile with the reason, no export request", async () => {
    const { sandbox, job, context, pushes } = await setUp();
    const sink = new WindowSink();
    const unreadable: WindowStateReader = {
      target: 't',
      heldWindows: () => Promise.reject(new WindowStateUnreadableError("job daily: cannot read t's state: EIO")),
    };
    const { tiles, report } = await runCatchUp(job, [sink], 'run-1', context([unreadable]));
    expect(tiles).toEqual([
      expect.objectContaining({
        status: 'failed',
        runId: 'run-1',
        error: { code: 'incremental_state_unreadable', message: "job daily: cannot read t's state: EIO", retryable: true },
      }),
    ]);
    expect(report).toMatchObject({
      today: null,
      windows: [],
      reason: "nothing run: job daily: cannot read t's state: EIO",
      error: { code: 'incremental_state_unreadable' },
    });
    expect(sink.windows).toEqual([]);
    expect(exportRequests(sandbox)).toBe(0);
    // Still one push: a run that could not read its state is a failed run of the job.
    expect(pushes).toHaveLength(1);
  });

  it('refuses targets too far apart with the backfill that makes them agree, its flags included', async () => {
    const { sandbox, job, context } = await setUp();
    const { report } = await runCatchUp(
      job,
      [new WindowSink()],
      'run-1',
      context([holding('a', ['2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04']), holding('b', [])]),
    );
    expect(report.error?.code).toBe('incremental_state_ambiguous');
    expect(report.error?.message).toContain('tilehouse backfill --job daily --from 2026-07-01 --to 2026-07-05 --step day --config c.yaml');
    expect(exportRequests(sandbox)).toBe(0);
  });

  it('accepts targets one day apart (a run cut short between two publishes): it starts at the one that lags', async () => {
    const { job, context } = await setUp();
    const { report } = await runCatchUp(job, [new WindowSink()], 'run-1', context([holding('a', ['2026-07-01', '2026-07-02']), holding('b', ['2026-07-01'])]));
    expect(report.error).toBeUndefined();
    expect(froms(report.windows)).toEqual(['2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05']);
  });

  it('throws a configuration mistake (exit 2) instead of reporting it as a failed tile', async () => {
    const { job, context } = await setUp();
    const mistake = ConfigError.single({ file: 'env.yaml', field: 'sinks', message: 'bad' });
    const broken: WindowStateReader = { target: 't', heldWindows: () => Promise.reject(mistake) };
    await expect(runCatchUp(job, [new WindowSink()], 'run-1', context([broken]))).rejects.toBe(mistake);
  });
});

describe('incrementalPlanOf', () => {
  it("shows the next run's windows without exporting anything, and why none when the state cannot be read", async () => {
    const { sandbox, job, context } = await setUp({ lookbackDays: 1 });
    const plan = await incrementalPlanOf(job, [new WindowSink()], context([holding('t', ['2026-07-01', '2026-07-02', '2026-07-03'])]));
    expect(plan).toMatchObject({ today: '2026-07-05', clock: { basis: 'source' } });
    expect(froms(plan.windows)).toEqual(['2026-07-03', '2026-07-04', '2026-07-05']);
    expect(froms(plan.lookback)).toEqual(['2026-07-03']);
    expect(froms(plan.open)).toEqual(['2026-07-05']);
    const unreadable: WindowStateReader = { target: 't', heldWindows: () => Promise.reject(new WindowStateUnreadableError('no')) };
    expect(await incrementalPlanOf(job, [], context([unreadable]))).toMatchObject({
      today: null,
      windows: [],
      reason: 'nothing: the state could not be planned',
      error: { code: 'incremental_state_unreadable' },
    });
    expect(exportRequests(sandbox)).toBe(0);
  });
});
