// src/sinks/files/, module by module (ARCHITECTURE.md gives the folder one paragraph): the file sink
// every file kind shares, parametrized by a `FileFormat` (`file-format.ts`: its name and label, content
// type, default path template, an optional wrapper stream such as gzip, a fresh encoder per run, the column
// names its files declare, `readColumns` and `countRows` of a stored file; test/sinks/files/
// file-format-seam.test.ts specifies the seam with a second, binary format defined in the test). Shared
// machinery, not a kind: it imports no kind's folder, and no store's: where a file lands is asked of the
// store registry (`../stores/registry.ts`). `file-sink.ts` (`FileSink`, this module: its store chosen once
// from the template's location; plan, sweep, access check, open, the publish guard's read of a target);
// `path-template.ts` (placeholders, a bucket's URL or a local path, the sweep scope; URLs checked by
// config/object-store-urls.ts); `guarded-writer.ts` (a writer with the publish guard's read of its target);
// `window-state.ts` (each sink's reader, asking its store); `workspace-checks.ts`; `file-errors.ts` (an
// unusable path template, an unreadable existing file); `descriptor.ts` (`fileSinkKind(spec)`: a kind's
// descriptor from its format, config schema, environment directory and sink; the store's IRSA annotation
// and whether a pod needs a volume come from the store).

import { text } from 'node:stream/consumers';
import type { Logger } from 'pino';
import type {
  AccessCheckContext,
  LeftoverSurvey,
  PlannedDataset,
  PlannedDatasetContext,
  RunHeld,
  Sink,
  SinkPlan,
  SinkRunContext,
  SinkWriter,
  StoredSchema,
  TargetPublication,
} from '../sink.js';
import { FileTargetUnreadableError } from './file-errors.js';
import type { FileFormat, FileSinkConfig } from './file-format.js';
import { manifestPathOf, storedManifestSchema, writtenByOf, type ManifestRun, type StoredManifest } from '../stores/manifest.js';
import { storeKindOf, type ObjectStore, type ObjectStoreKind, type StoreOptions } from '../stores/registry.js';
import { FilePathTemplate } from './path-template.js';
import { calendarDateIn } from '../../transform/calendar.js';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import { messageOf } from '../../errors.js';
import type { GuardCheck, TargetHolding } from '../publish-guard.js';
import { withGuard } from './guarded-writer.js';
import type { StoredFile } from './file-format.js';
import type { HeldWindow, WindowHoldings } from '../window-state.js';

/**
 * A file sink's settings: its config and where relative paths go, and what its store is loaded
 * with (the stores' settings from the environment and the seams tests inject, stores/object-store.ts).
 */
export interface FileSinkOptions<C extends FileSinkConfig = FileSinkConfig> extends StoreOptions {
  config: C;
  /** The environment's directory for this kind (`sinks.<kind>.directory`); relative path templates resolve under it. */
  directory: string;
  /** The publish guard's settings in force (the sink's over its kind's default); undefined: off. */
  guard?: GuardSettings | undefined;
  /** The job's IANA zone; `{date}` of a scheduled run is the run's start date there. */
  timezone: string;
}

/**
 * Writes each run of a tile to one file in the sink's format, replacing the previous file
 * atomically on commit. Where the file lands is its store's (stores/registry.ts), chosen once from
 * the template's location: a local file (temp file + rename), a Cloud Storage or an S3 object
 * (upload to a temp object + a conditional server-side copy). Every store writes the same bytes:
 * the format's encoder's, through its wrapper.
 */
export class FileSink<C extends FileSinkConfig = FileSinkConfig> implements Sink {
  readonly kind: C['type'];
  /** The store's: the likelier its publish is to fail, the earlier (a rename last). */
  readonly publishRank: number;
  private readonly template: FilePathTemplate;
  /** The store every target of this sink lands in: its template (or directory) names one. */
  private readonly storeKind: ObjectStoreKind;
  private loaded: Promise<ObjectStore> | undefined;

  /** Throws FilePathInvalidError for a bad path template, so configuration checks catch it. */
  constructor(
    readonly format: FileFormat<C>,
    private readonly options: FileSinkOptions<C>,
  ) {
    this.kind = format.name;
    this.template = new FilePathTemplate(format, options.config.path ?? format.defaultPathTemplate(options.config, false));
    this.storeKind = storeKindOf(this.template.sweepScope(options.directory).root);
    this.publishRank = this.storeKind.publishRank;
  }

  /** The run's file, its path template resolved for the run's day, named by its store as the kind names a written target. */
  async plannedDataset(context: PlannedDatasetContext): Promise<PlannedDataset> {
    const target = this.targetFor(context);
    return storeKindOf(target).lineageDataset(target);
  }

  /** The output path for a run (exposed for `validate`/dry runs and tests). */
  targetFor(context: Pick<SinkRunContext, 'jobName' | 'tileId' | 'runId' | 'startedAt' | 'window'>): string {
    return this.template.resolve(
      {
        name: context.jobName,
        tile: context.tileId,
        runId: context.runId,
        date: context.window?.from ?? calendarDateIn(context.startedAt, this.options.timezone),
      },
      this.options.directory,
    );
  }

  /** The store, loaded (with its client) on first use: a run that writes no object never loads a cloud client. */
  private store(): Promise<ObjectStore> {
    this.loaded ??= this.storeKind.load(this.options);
    return this.loaded;
  }

  /** Temp files of dead runs, looked for only where this sink's template can put files. */
  async sweep(logger: Logger): Promise<string[]> {
    const { root, recursive } = this.template.sweepScope(this.options.directory);
    return (await this.store()).sweep(root, { recursive, logger });
  }

  /** What a sweep would remove where this sink's template puts files, found without removing (`status`). */
  async leftovers({ logger }: { logger: Logger }): Promise<LeftoverSurvey> {
    const { root, recursive } = this.template.sweepScope(this.options.directory);
    const where = recursive ? `${root} and below` : root;
    try {
      return { where, found: await (await this.store()).strays(root, { recursive, logger }) };
    } catch (error) {
      return { where, unchecked: messageOf(error) };
    }
  }

  /** Whether a run could write where the template puts files (the deepest place it fixes), found without writing. */
  async checkAccess(context: AccessCheckContext): Promise<string | undefined> {
    const { root } = this.template.sweepScope(this.options.directory);
    return (await this.store()).checkAccess(root, { jobName: context.jobName, format: this.format, logger: context.logger });
  }

  /** Which of `windows` the sink's targets hold, whole and published (read from the manifests beside them). */
  async heldWindows(windows: readonly HeldWindow[], context: { jobName: string; tileId: string; template: string; timezone: string }): Promise<WindowHoldings> {
    const targets = windows.map((window) => this.targetFor({ jobName: context.jobName, tileId: context.tileId, runId: '', startedAt: new Date(), window }));
    return (await this.store()).heldWindows(windows, targets, context);
  }

  /** The column headers the target declares as it is now (the format reads them); undefined when there is none. */
  private async existingHeader(target: string, jobName: string): Promise<string[] | undefined> {
    const file = await this.storedFile(target);
    try {
      return file === undefined ? undefined : await this.format.readColumns(file, this.options.config);
    } catch (error) {
      throw error instanceof FileTargetUnreadableError ? error.forJob(jobName) : error;
    }
  }

  /** The target as stored now, in whichever store; undefined when there is none. */
  private async storedFile(target: string): Promise<StoredFile | undefined> {
    return (await this.store()).storedFile(target);
  }

  /** The manifest beside the target as stored now (untrusted JSON); undefined when there is none or it does not parse. */
  private async storedManifest(target: string): Promise<StoredManifest | undefined> {
    // Read as any stored file is, so every store (local, gs://, s3://) answers alike.
    const manifest = await this.storedFile(manifestPathOf(target));
    if (manifest === undefined) return undefined;
    const content = await text(manifest.read());
    try {
      return storedManifestSchema.parse(JSON.parse(content));
    } catch {
      return undefined;
    }
  }

  /**
   * What a file target holds, for the publish guard: the rows of the manifest beside it when that
   * manifest describes it (its bytes are the file's size: the manifest is renamed in right after
   * the file, so one beside a newer file is another run's), else the file itself, counted by its
   * format (CSV: every record read; Parquet: the footer's num_rows). No file: nothing held.
   */
  async holdingOf(target: string): Promise<TargetHolding> {
    return (await this.readTarget(target)).holding;
  }

  /**
   * What the target holds and its version (StoredFile.version), from one look at the stored file;
   * the version is undefined when there is no file or it cannot be read (then it is read again).
   */
  private async readTarget(target: string): Promise<{ version: string | undefined; holding: TargetHolding }> {
    const base = { target, effect: 'replace' as const };
    let version: string | undefined;
    try {
      const file = await this.storedFile(target);
      if (file === undefined) return { version, holding: { ...base, rows: undefined, readFrom: 'no file yet' } };
      version = await file.version?.().catch(() => undefined);
      const manifest = this.options.config.manifest === true ? await this.storedManifest(target) : undefined;
      if (manifest !== undefined && typeof manifest.rows === 'number' && manifest.bytes === (await file.size()))
        return { version, holding: { ...base, rows: manifest.rows, readFrom: 'its manifest', ...writtenByOf(manifest) } };
      return { version, holding: { ...base, rows: await this.format.countRows(file, this.options.config), readFrom: `the ${this.format.label} file counted` } };
    } catch (error) {
      return { version, holding: { ...base, rows: undefined, readFrom: 'unreadable', unreadable: messageOf(error) } };
    }
  }

  /** The names the file declares (CSV: its header record as written) and each column's type in the format's terms. */
  storedSchema(context: Pick<SinkRunContext, 'columns'>): StoredSchema {
    const names = this.format.columnNames(context.columns);
    return { fields: context.columns.map((column, index) => ({ name: names[index]!, type: this.format.storedType(column) })) };
  }

  /**
   * Which run wrote the target: its manifest when one describes the file (whether or not this
   * sink writes manifests now), else what the store records (an object's run id and update time;
   * a local file's modification time) with the rows counted by the format.
   */
  async publication(context: SinkRunContext): Promise<TargetPublication> {
    const target = this.targetFor(context);
    const base = { sink: this.kind, target };
    try {
      const file = await this.storedFile(target);
      if (file === undefined) return { ...base, state: 'none', readFrom: 'no file yet' };
      const manifest = await this.storedManifest(target);
      if (manifest?.runId !== undefined && manifest.bytes === (await file.size())) {
        const at = manifest.runStartedAt ?? manifest.preparedAt;
        return {
          ...base,
          state: 'written',
          runId: manifest.runId,
          ...(at === undefined ? {} : { at }),
          ...(manifest.rows === undefined ? {} : { rows: manifest.rows }),
          ...(manifest.definition === undefined ? {} : { definition: manifest.definition }),
          readFrom: 'its manifest',
        };
      }
      const written = await file.written?.();
      const rows = await this.format.countRows(file, this.options.config);
      const stored = { ...(written === undefined ? {} : { at: written.at }), rows };
      if (written?.runId !== undefined) return { ...base, state: 'written', runId: written.runId, ...stored, readFrom: 'object metadata; rows counted' };
      return {
        ...base,
        state: 'unrecorded',
        ...stored,
        readFrom: 'file modified; rows counted',
        note: 'no manifest names its run (manifest: true records it)',
      };
    } catch (error) {
      return { ...base, state: 'unreadable', readFrom: 'unreadable', note: messageOf(error) };
    }
  }

  /**
   * Whether the target holds a publish of `runId` (SinkWriter.heldRun): its manifest when one
   * describes the file (whether or not this sink writes manifests now), else what the store
   * records of the object (gs:// and s3:// objects carry their run id); a local file no manifest
   * describes cannot tell (the run history may). No file: no publish of any run is there.
   */
  async heldRunAt(target: string, runId: string): Promise<RunHeld> {
    const base = { sink: this.kind, target };
    try {
      const file = await this.storedFile(target);
      if (file === undefined) return { ...base, held: 'no', readFrom: 'no file' };
      const manifest = await this.storedManifest(target);
      if (manifest?.runId !== undefined && manifest.bytes === (await file.size())) {
        if (manifest.runId !== runId) return { ...base, held: 'no', readFrom: `its manifest (run ${manifest.runId})` };
        return { ...base, held: 'yes', ...(manifest.rows === undefined ? {} : { rows: manifest.rows }), readFrom: 'its manifest' };
      }
      const written = await file.written?.();
      if (written?.runId === undefined) return { ...base, held: 'unknown', readFrom: 'no manifest describes the file' };
      if (written.runId !== runId) return { ...base, held: 'no', readFrom: `object metadata (run ${written.runId})` };
      return { ...base, held: 'yes', rows: await this.format.countRows(file, this.options.config), readFrom: 'object metadata; rows counted' };
    } catch (error) {
      return { ...base, held: 'unknown', readFrom: `unreadable: ${messageOf(error)}` };
    }
  }

  /**
   * The guard of a writer: what its target holds is read when the writer opens, while the run's
   * heap is small and its pages are still coming (issue 44: counting last night's file after the
   * pages, at the run's highest, added ~45 MB to its peak; gzip and gs:// or s3:// reads leave a
   * stream's buffers behind), and judged as is when the target is unchanged at publish; one
   * replaced meanwhile is read again.
   */
  guardCheck(context: SinkRunContext): GuardCheck {
    const target = this.targetFor(context);
    const settings = this.options.guard;
    if (settings === undefined) return { settings, holding: () => this.holdingOf(target) };
    const atOpen = this.readTarget(target);
    return {
      settings,
      holding: async () => {
        const early = await atOpen;
        if (early.version === undefined) return this.holdingOf(target);
        const now = await this.readVersion(target);
        return now === early.version ? early.holding : this.holdingOf(target);
      },
    };
  }

  /** The target's version now, or undefined when there is no file or it cannot be read. */
  private async readVersion(target: string): Promise<string | undefined> {
    try {
      return await (await this.storedFile(target))?.version?.();
    } catch {
      return undefined;
    }
  }

  /** Compares the names the run's file would declare with the existing file's (by name and order: the plan has no types to compare). */
  async plan(context: SinkRunContext): Promise<SinkPlan> {
    const target = this.targetFor(context);
    const existing = await this.existingHeader(target, context.jobName);
    if (existing === undefined) return { sink: this.kind, target, action: 'create', details: [] };
    const headers = this.format.columnNames(context.columns);
    const details = [
      ...headers.filter((header) => !existing.includes(header)).map((header) => `+ ${header}`),
      ...existing.filter((header) => !headers.includes(header)).map((header) => `- ${header}`),
    ];
    if (details.length === 0 && existing.join('\u0000') !== headers.join('\u0000'))
      details.push(`~ column order: ${existing.join(', ')} → ${headers.join(', ')}`);
    return { sink: this.kind, target, action: details.length === 0 ? 'unchanged' : 'change', details };
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const target = this.targetFor(context);
    const { format } = this;
    const { config } = this.options;
    // A fresh encoder per run: a format may keep state across a run's pages. The wrapper is made
    // once the destination is open, so a failed open leaves no stream behind.
    const bytes = {
      format,
      encoder: format.createEncoder(context.columns, config),
      wrap: () => format.wrapper(config),
      columns: context.columns,
      gzip: format.gzipped(config),
    };
    const writer = await (await this.store()).openWriter({
      ...bytes,
      contentType: format.contentType(config),
      jobName: context.jobName,
      target,
      runId: context.runId,
      logger: context.logger,
      ...(context.signal ? { signal: context.signal } : {}),
      ...(config.manifest === true ? { manifest: manifestRunOf(context) } : {}),
      ...(context.retryBudget ? { retryBudget: context.retryBudget } : {}),
    });
    return withGuard(writer, this.guardCheck(context), () => this.heldRunAt(target, context.runId));
  }
}

/** What a run records in its manifests besides the file: its window, when it started, its job's definition. */
function manifestRunOf(context: SinkRunContext): ManifestRun {
  return {
    ...(context.window ? { window: context.window } : {}),
    runStartedAt: context.startedAt.toISOString(),
    ...(context.definition ? { definition: context.definition } : {}),
  };
}
