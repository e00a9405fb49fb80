import { pino } from 'pino';
import { loadRunnableWorkspace, type RunnableWorkspace } from '../../src/workspace/load-workspace.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { runJobs } from '../../src/pipeline/run-jobs.js';
import type { RunSummary } from '../../src/pipeline/job-summary.js';
import { buildSinks } from '../../src/sinks/build-sinks.js';
import type { Sink, SinkRunContext, SinkWriter } from '../../src/sinks/sink.js';
import type { Sandbox } from '../../sandbox/index.js';
import { FAST_RETRY, sandboxEnv, type Workspace } from './cli-harness.js';

/** A workspace written by writeWorkspace, loaded as `tilehouse run` loads it. */
export function loadForRun(workspace: Workspace, sandbox: Sandbox): Promise<RunnableWorkspace> {
  return loadRunnableWorkspace({ config: workspace.configFile, jobs: workspace.jobsDir }, [], sandboxEnv(sandbox));
}

/** runJobs over a loaded workspace; `sinksFor` replaces the sinks the config would build. */
export async function runLoaded(
  loaded: RunnableWorkspace,
  options: { sinksFor?: (job: LoadedJob, built: Sink[]) => Sink[]; signal?: AbortSignal } = {},
): Promise<RunSummary> {
  const sinks = new Map<LoadedJob, Sink[]>();
  for (const job of loaded.selected) {
    const built = await buildSinks(job, loaded.environment);
    sinks.set(job, options.sinksFor?.(job, built) ?? built);
  }
  return runJobs(loaded.selected, {
    environment: loaded.environment,
    credentials: loaded.credentials,
    logger: pino({ level: 'silent' }),
    buildSinks: (job) => sinks.get(job)!,
    retry: FAST_RETRY,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/**
 * A real sink whose writers fail at `publish` (before touching the target), as a rename onto a
 * volume that went read-only would; everything else is the real sink's.
 */
export class PublishFailsSink implements Sink {
  readonly kind: Sink['kind'];
  readonly publishRank: number;

  constructor(
    private readonly inner: Sink,
    private readonly error: Error = Object.assign(new Error('EIO: i/o error, rename (simulated)'), { code: 'EIO' }),
  ) {
    this.kind = inner.kind;
    this.publishRank = inner.publishRank;
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const writer = await this.inner.open(context);
    const error = this.error;
    return {
      target: writer.target,
      writeRows: (rows) => writer.writeRows(rows),
      prepare: () => writer.prepare(),
      publish: () => Promise.reject(error),
      abort: () => writer.abort(),
    };
  }
  sweep(logger: Parameters<Sink['sweep']>[0]): Promise<string[]> {
    return this.inner.sweep(logger);
  }
  plan(context: SinkRunContext): ReturnType<Sink['plan']> {
    return this.inner.plan(context);
  }
}

/** A real sink that calls `hook` when the pipeline reaches `phase` of its writer, then goes on as the real one. */
export class HookedSink implements Sink {
  readonly kind: Sink['kind'];
  readonly publishRank: number;

  constructor(
    private readonly inner: Sink,
    private readonly phase: 'prepare' | 'publish',
    private readonly hook: () => void,
  ) {
    this.kind = inner.kind;
    this.publishRank = inner.publishRank;
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const writer = await this.inner.open(context);
    const { phase, hook } = this;
    return {
      target: writer.target,
      writeRows: (rows) => writer.writeRows(rows),
      prepare: () => {
        if (phase === 'prepare') hook();
        return writer.prepare();
      },
      publish: () => {
        if (phase === 'publish') hook();
        return writer.publish();
      },
      abort: () => writer.abort(),
    };
  }
  sweep(logger: Parameters<Sink['sweep']>[0]): Promise<string[]> {
    return this.inner.sweep(logger);
  }
  plan(context: SinkRunContext): ReturnType<Sink['plan']> {
    return this.inner.plan(context);
  }
}
