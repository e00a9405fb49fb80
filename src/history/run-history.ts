import path from 'node:path';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import type { Logger } from '../log.js';
import type { JobRunSummary } from '../pipeline/job-summary.js';
import { documentsAt, type StoredDocuments, type StoreSeams } from '../sinks/registry.js';
import { formatOwnerTag } from '../temp-owner.js';
import { definitionPartValues, jobDefinitionOf, type DefinitionValues } from '../value-types/job-definition.js';
import { redactedJson } from '../redaction.js';
import { judgeRun, readJobHistory } from './read-history.js';
import { HistoryUnavailableError } from './history-errors.js';
import { type BackfillShard, HEARTBEAT_MS, RUN_RECORD_VERSION, recordNameOf, type RunRecord } from './run-record.js';
import { definitionSourceOf } from '../sinks/registry.js';
import type { EarlierTries } from '../pipeline/run-id-held.js';
import { messageOf } from '../errors.js';
import { onLineageStartSent, type LineageStartSent } from '../lineage/lineage.js';
import { telemetry } from '../telemetry/telemetry.js';
import { closeKilledLineage } from './killed-runs.js';

// src/history/, module by module: `run-record.ts` (one run of one job as kept: its schema and its
// document's name), `run-history.ts` (this module: the records a run writes, "running" at its start,
// a heartbeat, the end; retention), `read-history.ts` (the records `status` reads, and the verdict
// on a "running" one: live, or killed), `killed-runs.ts` (a killed try's open lineage runs, closed by
// the next run of its job with a FAIL, once), `definition-diff.ts` (what changed in a job since a run, as
// old → new values), `target-publishers.ts` (which record published a target, a window's run id
// resolved to its run's record and window), `window-holes.ts` (failed day windows no later run
// filled), `run-baseline.ts` (a run beside the median of the job's earlier successful runs, and
// what is far off it). Where the records lie is the stores' (src/sinks/stores/registry.ts's
// `documentsAt`): a local directory, a gs:// or s3:// prefix, asked through one interface.

/** What the history is found by: the environment's `history` settings, and its file (a relative directory is its). */
export interface HistoryWorkspace {
  environment: EnvironmentConfig;
  configFile: string;
}

/** The history's documents, for writing or for `status`. */
export function openHistoryDocuments(workspace: HistoryWorkspace, seams: StoreSeams = {}): Promise<StoredDocuments> {
  return documentsAt(workspace.environment.history.location, workspace.environment, { baseDirectory: path.dirname(workspace.configFile), seams });
}

/** What a run is started with, for its records. */
export interface RunStart {
  runId: string;
  startedAt: Date;
  trigger: RunRecord['trigger'];
  traceId?: string | undefined;
  /** A backfill's shard (an Indexed Job's pod): its record is named apart from its sibling shards'. */
  shard?: BackfillShard | undefined;
}

/** The run history of a workspace, opened for writing: `history.location` in the environment file. */
export class RunHistory {
  private constructor(
    private readonly documents: StoredDocuments | undefined,
    private readonly location: string,
    private readonly keepPerJob: number,
    private readonly logger: Logger,
    /** The tenant, the input a killed try's closing FAIL names. */
    private readonly sourceUrl: string,
  ) {}

  /**
   * Opens the history's place. A place that cannot be opened (a store's client without
   * credentials) is logged and the run goes on without records: the history serves the morning,
   * it never fails a night's run.
   */
  static async open(workspace: HistoryWorkspace, logger: Logger, seams: StoreSeams = {}): Promise<RunHistory> {
    const { location, keepPerJob } = workspace.environment.history;
    try {
      return new RunHistory(await openHistoryDocuments(workspace, seams), location, keepPerJob, logger, workspace.environment.source.baseUrl);
    } catch (error) {
      warn(logger, new HistoryUnavailableError(location, 'opening', error));
      return new RunHistory(undefined, location, keepPerJob, logger, workspace.environment.source.baseUrl);
    }
  }

  /** Writes a "running" record of each job now, and keeps their heartbeat until each is finished. */
  async begin(jobs: readonly LoadedJob[], start: RunStart): Promise<RunInProgress> {
    const run = new RunInProgress(this, jobs, start);
    await run.started();
    // Beside the run, awaited by its end: a killed try's open lineage runs are closed by this one.
    run.alongside(Promise.all(jobs.map((job) => this.closeKilledLineage(job, start.runId))));
    return run;
  }

  /** killed-runs.ts: the job's killed tries' open lineage runs, each closed with a FAIL; logged, never thrown. */
  private async closeKilledLineage(job: LoadedJob, byRunId: string): Promise<void> {
    if (this.documents === undefined) return;
    try {
      const closed = await closeKilledLineage(this.documents, job, { sourceUrl: this.sourceUrl, byRunId, write: (record, name) => this.write(record, name) });
      if (closed.length > 0)
        this.logger.info({ job: job.name, lineageRunIds: closed }, `closed the open lineage run of a killed run of job ${job.name} with FAIL`);
    } catch (error) {
      warn(this.logger, new HistoryUnavailableError(this.location, `looking for killed runs of job ${job.name} whose lineage is open`, error));
    }
  }

  /** The definition a run of a job ran with, as its record keeps it; undefined when none is kept (or readable). */
  async definitionOfRun(job: string, runId: string): Promise<DefinitionValues | undefined> {
    if (this.documents === undefined) return undefined;
    const history = await readJobHistory(this.documents, job, { newest: 0 });
    return (await history.find(runId))?.record.definition;
  }

  /**
   * What the history says of earlier tries of a run id of a job (pipeline/run-id-held.ts): the
   * targets a finished try published, and whether a try ended without saying (a "running" record:
   * killed, or still running). Read before this try writes its own record, which may have the
   * same name (a retry at the same instant) and would hide the earlier one.
   */
  async earlierTries(job: string, runId: string): Promise<EarlierTries> {
    if (this.documents === undefined) return { readable: false, reason: `${this.location} could not be opened` };
    try {
      const tries = await (await readJobHistory(this.documents, job, { newest: 0 })).findAll(runId);
      const published = new Map<string, number>();
      const unsettled: string[] = [];
      let unended = false;
      for (const { record } of tries) {
        for (const target of record.targets) published.set(target.target, target.rows);
        unsettled.push(...(record.outcomeUnknown ?? []));
        // A try still running, or killed once it had begun to publish, may hold any target; one
        // killed before (no publishingAt) published nothing.
        if (record.state === 'running' && (record.publishingAt !== undefined || judgeRun(record).verdict !== 'killed')) unended = true;
      }
      return { readable: true, published, unsettled: unended ? 'every target' : unsettled };
    } catch (error) {
      return { readable: false, reason: `${this.location}: ${messageOf(error)}` };
    }
  }

  /** @internal Writes one record whole under its name (recordNameOf); a failure is logged, never thrown. */
  async write(record: RunRecord, name: string): Promise<void> {
    if (this.documents === undefined) return;
    try {
      // Redacted as written: the reader is another process (the morning's `status`) that never registered the secret.
      await this.documents.put(`${record.job}/${name}`, `${redactedJson(record, 2)}\n`);
    } catch (error) {
      warn(this.logger, new HistoryUnavailableError(this.location, `writing the record of run ${record.runId} of job ${record.job}`, error));
    }
  }

  /** @internal Keeps the newest `keepPerJob` records of a job: names sort by start. */
  async prune(job: string): Promise<void> {
    if (this.documents === undefined) return;
    const documents = this.documents;
    try {
      const names = (await documents.list(job)).filter((name) => name.endsWith('.json')).sort();
      for (const name of names.slice(0, Math.max(0, names.length - this.keepPerJob))) await documents.remove(`${job}/${name}`);
    } catch (error) {
      warn(this.logger, new HistoryUnavailableError(this.location, `removing the oldest records of job ${job}`, error));
    }
  }
}

function warn(logger: Logger, error: HistoryUnavailableError): void {
  logger.warn({ code: error.code }, `${error.message}; the run's outcome is unchanged`);
}

/** The records of one run's jobs, from "running" to their end. */
export class RunInProgress {
  private readonly records = new Map<string, RunRecord>();
  /** The records' name in each job's folder, fixed at the start: every later write replaces the same document. */
  private readonly name: string;
  /** One write at a time per job, in order: the end is never overtaken by a heartbeat. */
  private readonly writes = new Map<string, Promise<void>>();
  private readonly finished = new Set<string>();
  private readonly heartbeat: NodeJS.Timeout;
  /** Work beside the run (closing a killed try's lineage), awaited by `end`. */
  private readonly beside: Promise<unknown>[] = [];
  private readonly unsubscribe: Array<() => void>;
  private readonly runId: string;

  constructor(
    private readonly history: RunHistory,
    jobs: readonly LoadedJob[],
    start: RunStart,
  ) {
    const at = start.startedAt.toISOString();
    this.name = recordNameOf({ startedAt: at, runId: start.runId, shard: start.shard });
    for (const job of jobs) {
      const source = definitionSourceOf(job);
      this.records.set(job.name, {
        version: RUN_RECORD_VERSION,
        job: job.name,
        tile: job.tile,
        runId: start.runId,
        state: 'running',
        trigger: start.trigger,
        startedAt: at,
        heartbeatAt: at,
        owner: formatOwnerTag(),
        ...(start.traceId === undefined || start.traceId === '' ? {} : { traceId: start.traceId, spansExportedAt: null }),
        targets: [],
        definition: { fingerprint: jobDefinitionOf(source).fingerprint, tile: job.tile, values: definitionPartValues(source) },
      });
    }
    this.heartbeat = setInterval(() => void this.beat(), HEARTBEAT_MS);
    this.heartbeat.unref();
    this.runId = start.runId;
    const traceId = start.traceId;
    this.unsubscribe = [
      onLineageStartSent((sent) => this.lineageStarted(sent)),
      ...(traceId === undefined || traceId === '' ? [] : [telemetry().onSpansExported((traceIds) => traceIds.has(traceId) && this.spansExported())]),
    ];
  }

  /** @internal RunHistory.begin's: work beside the run that its end waits for. */
  alongside(work: Promise<unknown>): void {
    this.beside.push(work);
  }

  /**
   * A START of one of this run's tiles (a window's run id is derived from the run's) was accepted:
   * its OpenLineage run id is recorded at once, so a try killed before its end names the run it left open.
   */
  private lineageStarted(sent: LineageStartSent): void {
    const record = this.records.get(sent.job);
    if (record === undefined || this.finished.has(sent.job)) return;
    if (sent.runId !== this.runId && !sent.runId.startsWith(`${this.runId}-`)) return;
    const runIds = [...(record.lineage?.runIds ?? []), sent.ref.runId];
    this.records.set(sent.job, { ...record, lineage: { namespace: sent.ref.namespace, job: sent.ref.job, runIds } });
    void this.enqueue(sent.job);
  }

  /** The collector accepted a span of this run's trace: the first time is written at once, later ones with the heartbeat. */
  private spansExported(): void {
    const at = new Date().toISOString();
    for (const [job, record] of this.records) {
      if (this.finished.has(job)) continue;
      this.records.set(job, { ...record, spansExportedAt: at });
      if (record.spansExportedAt === null) void this.enqueue(job);
    }
  }

  /** @internal */
  async started(): Promise<void> {
    await Promise.all([...this.records.keys()].map((job) => this.enqueue(job)));
  }

  private enqueue(job: string): Promise<void> {
    const next = (this.writes.get(job) ?? Promise.resolve()).then(() => this.history.write(this.records.get(job)!, this.name));
    this.writes.set(job, next);
    return next;
  }

  private async beat(): Promise<void> {
    const at = new Date().toISOString();
    for (const [job, record] of this.records) {
      if (this.finished.has(job)) continue;
      this.records.set(job, { ...record, heartbeatAt: at });
      await this.enqueue(job);
    }
  }

  /**
   * A job's end, from its tiles (one; an incremental job's day windows, several): the first that
   * did not succeed decides the outcome, the rows and targets are every tile's. `windows.ran`: the
   * day windows the tiles ran, in the tiles' order.
   */
  async finish(tiles: readonly JobRunSummary[], windows?: RunWindows): Promise<void> {
    const first = tiles[0];
    if (first === undefined) return;
    await this.finishJob(first.job, tiles, windows);
  }

  /**
   * A job's day windows ended: none ran (a `--resume` that found every window done) is a success of
   * no rows. `durationMs`: the batch's own, when windows ran side by side (their sum would overstate it).
   */
  async finishWindows(job: string, tiles: readonly JobRunSummary[], windows: RunWindows, durationMs?: number): Promise<void> {
    await this.finishJob(job, tiles, windows, durationMs);
  }

  /**
   * A job's run is about to change its first target: the record says so (and is written) before
   * any publish, so a retry of a killed try knows whether that try could have published.
   */
  async publishing(job: string): Promise<void> {
    const record = this.records.get(job);
    if (record === undefined || this.finished.has(job) || record.publishingAt !== undefined) return;
    this.records.set(job, { ...record, publishingAt: new Date().toISOString() });
    await this.enqueue(job);
  }

  /** A backfill's range and windows, once it has chosen them (its record is written "running" before). */
  async describeBackfill(job: string, backfill: NonNullable<RunRecord['backfill']>): Promise<void> {
    const record = this.records.get(job);
    if (record === undefined || this.finished.has(job)) return;
    this.records.set(job, { ...record, backfill });
    await this.enqueue(job);
  }

  private async finishJob(
    job: string,
    tiles: readonly JobRunSummary[],
    windows: RunWindows | undefined,
    durationMs = tiles.reduce((sum, tile) => sum + tile.durationMs, 0),
  ) {
    const record = this.records.get(job);
    if (record === undefined || this.finished.has(job)) return;
    this.finished.add(job);
    const decisive = tiles.find((tile) => tile.status !== 'succeeded') ?? tiles.at(-1);
    const all = <K extends 'attempted' | 'unpublished' | 'mixed' | 'outcomeUnknown' | 'leftBehind'>(key: K) => {
      const values = tiles.flatMap((tile) => tile[key] ?? []);
      return values.length === 0 ? {} : { [key]: values };
    };
    const finishedAt = new Date();
    this.records.set(job, {
      ...record,
      state: decisive?.status ?? 'succeeded',
      heartbeatAt: finishedAt.toISOString(),
      finishedAt: finishedAt.toISOString(),
      durationMs,
      ...(decisive?.error === undefined ? {} : { error: { code: decisive.error.code, message: decisive.error.message } }),
      rows: tiles.reduce((sum, tile) => sum + tile.rows, 0),
      pages: tiles.reduce((sum, tile) => sum + tile.pages, 0),
      targets: targetsOf(tiles, windows?.ran),
      ...all('attempted'),
      ...all('unpublished'),
      ...all('mixed'),
      ...all('outcomeUnknown'),
      ...all('leftBehind'),
      ...timingsOf(tiles),
      ...lineageOf(tiles),
      ...(windows?.ran === undefined || windows.ran.length === 0 ? {} : { windows: windows.ran.map(({ from, to }) => ({ from, to })) }),
      ...(windows === undefined || windows.failed.length === 0 ? {} : { failedWindows: windows.failed.map(({ from, to }) => ({ from, to })) }),
    });
    await this.enqueue(job);
    await this.history.prune(job);
  }

  /**
   * The run ended (or threw) with jobs that reported no end: each is recorded failed with `error`
   * (the stop, or what threw), so that no record of a run that ended stays "running".
   */
  async end(error: { code: string; message: string } | undefined): Promise<void> {
    clearInterval(this.heartbeat);
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    await Promise.allSettled(this.beside);
    const at = new Date().toISOString();
    for (const [job, record] of this.records) {
      if (this.finished.has(job)) continue;
      this.finished.add(job);
      this.records.set(job, {
        ...record,
        state: 'failed',
        heartbeatAt: at,
        finishedAt: at,
        durationMs: Date.parse(at) - Date.parse(record.startedAt),
        error: error ?? { code: 'run_stopped', message: `job ${job}: the run ended before this job ran` },
      });
      await this.enqueue(job);
    }
    await Promise.all(this.writes.values());
  }
}

/** The day windows of a run: those it ran (in its tiles' order, when it knows them) and those that did not succeed. */
export interface RunWindows {
  failed: ReadonlyArray<{ from: string; to: string }>;
  ran?: ReadonlyArray<{ from: string; to: string }>;
}

/**
 * What the tiles published, each target with the day window that wrote it when the tiles are the
 * windows (one tile each): `status` resolves a target naming a window's run id (`<id>-YYYYMMDD`)
 * to this record and window, and tells which failed windows a later run filled.
 */
function targetsOf(tiles: readonly JobRunSummary[], ran: RunWindows['ran']): RunRecord['targets'] {
  const windowOf = (index: number) => (ran !== undefined && ran.length === tiles.length ? ran[index] : undefined);
  return tiles.flatMap((tile, index) => {
    const window = windowOf(index);
    return tile.outputs.map((output) => ({
      sink: output.sink,
      target: output.target,
      rows: output.rows,
      ...(window === undefined ? {} : { window: { from: window.from, to: window.to } }),
    }));
  });
}

/** The tiles' OpenLineage runs, in the order they ran, under the job their events name (one per job). */
function lineageOf(tiles: readonly JobRunSummary[]): { lineage?: NonNullable<RunRecord['lineage']> } {
  const refs = tiles.flatMap((tile) => (tile.lineage === undefined ? [] : [tile.lineage]));
  const first = refs[0];
  return first === undefined ? {} : { lineage: { namespace: first.namespace, job: first.job, runIds: refs.map((ref) => ref.runId) } };
}

/** The tiles' `timings`, summed by name (an incremental job's windows add up). */
function timingsOf(tiles: readonly JobRunSummary[]): { timings?: Record<string, number> } {
  const sums: Record<string, number> = {};
  for (const tile of tiles) for (const [name, ms] of Object.entries(tile.timings ?? {})) sums[name] = (sums[name] ?? 0) + ms;
  return Object.keys(sums).length === 0 ? {} : { timings: sums };
}
