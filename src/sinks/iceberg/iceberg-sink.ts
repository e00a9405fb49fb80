import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { IcebergDefaults } from '../../config/environment-schema.js';
import type { IcebergSinkConfig } from '../../config/iceberg-sink-schema.js';
import type { GuardSettings } from '../../config/publish-guard-schema.js';
import { isTilehouseError, messageOf } from '../../errors.js';
import type { TypedRow } from '../../transform/column.js';
import { jobDefinitionSchema, type JobDefinition } from '../../value-types/job-definition.js';
import type { LineageDatasetName } from '../lineage-dataset-name.js';
import type { GuardCheck, TargetHolding } from '../publish-guard.js';
import type {
  AccessCheckContext,
  LeftoverSurvey,
  PlannedDataset,
  PlannedDatasetContext,
  RunHeld,
  Sink,
  SinkPlan,
  SinkResult,
  SinkRunContext,
  SinkWriter,
  StoredSchema,
  TargetPublication,
} from '../sink.js';
import { type IcebergCatalog, type LoadedTable, type TableIdentifier, tableName } from './catalog.js';
import { openConfiguredCatalog, vendedCredentialBookFor } from './catalog-settings.js';
import type { VendedCredentialBook } from './vended-credentials.js';
import { IcebergColumnError, IcebergPublishOutcomeUnknownError, IcebergSchemaMismatchError } from './iceberg-errors.js';
import { daysOfRows, daysOfWindow, daysShown, rowsInDays } from './days-held.js';
import { icebergLineageDataset, newTableLocation, tableIdentifierOf } from './iceberg-names.js';
import { icebergTypeOf } from './iceberg-schema.js';
import { refusalOf, type SchemaContract, type SchemaDiff, schemaDiff } from './schema-contract.js';
import type { StoreOptions } from '../stores/registry.js';
import { childLocation, removeLocation, withTableFileStores, writeNewFile } from './local-files.js';
import { currentSchema, currentSnapshot, RUN_ID_SUMMARY_KEY, type Snapshot, snapshotOfRun, type TableMetadata } from './table-metadata.js';
import { OverwriteRun } from './overwrite-run.js';
import type { DayPartitionOptions } from './partition-spec.js';
import { housekeepingPolicy, type IcebergHousekeepingPolicy } from './expire-snapshots.js';
import { type HousekeepingReport, unreferencedFilesOf } from './orphan-files.js';
import { IcebergRun, LINEAGE_COLUMNS } from './table-writer.js';

/** The summary keys beside the run id: when the run started, and its window (a backfill's, an incremental run's). */
export const SUMMARY_KEYS = {
  startedAt: 'tilehouse.started-at',
  windowFrom: 'tilehouse.window-from',
  windowTo: 'tilehouse.window-to',
  windowOpen: 'tilehouse.window-open',
  /** The job's definition the run ran with (JSON), for the guard's and status's "changed since". */
  definition: 'tilehouse.definition',
} as const;

/** The definition a snapshot recorded, or undefined (none, or not one tilehouse can read). */
function definitionOf(snapshot: Snapshot | undefined): JobDefinition | undefined {
  const text = snapshot?.summary[SUMMARY_KEYS.definition];
  if (text === undefined) return undefined;
  try {
    const parsed = jobDefinitionSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export interface IcebergSinkOptions {
  config: IcebergSinkConfig;
  settings: IcebergDefaults;
  /** The environment file, for the errors that locate a secret. */
  environmentFile: string;
  guard: GuardSettings | undefined;
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * The stores the table's files go through (a gs:// or s3:// location): the environment's
   * `sinks.gcs` / `sinks.s3` settings and a test's seams, as a file sink's (storeOptionsFrom).
   */
  stores?: StoreOptions;
  /** The environment's `googleCredentialsWaitMs`, for a catalog with Google credentials. */
  googleCredentialsWaitMs?: number;
  /** Opens the catalog instead of `sinks.iceberg.catalog` (a test's catalog with faults). */
  openCatalog?: (at: { jobName: string; target: string }) => Promise<IcebergCatalog>;
}

/**
 * Writes each tile run into an Iceberg table through its catalog: the data file streams while the
 * run reads, `prepare` writes its manifest, `publish` is the one catalog commit (table-writer.ts's
 * IcebergRun), exactly once by the run id in the snapshot's summary. Every view's answer is read
 * from the table's metadata (its snapshots' summaries; a partition run's guard, its manifests),
 * never from its data files.
 */
export class IcebergSink implements Sink {
  readonly kind = 'iceberg' as const;
  // A remote catalog commit is likelier to fail than a local rename: it publishes first.
  readonly publishRank = 0;
  private readonly table: TableIdentifier;
  readonly target: string;
  /** One options object for the sink's life: table-files.ts loads each store once per object. */
  private readonly stores: StoreOptions;
  /** The storage credentials the catalog vends for the table (`accessDelegation`), which its files are written with. */
  private readonly vended: VendedCredentialBook | undefined;

  constructor(private readonly options: IcebergSinkOptions) {
    this.table = tableIdentifierOf(options.config.table);
    this.target = tableName(this.table);
    this.vended = options.openCatalog ? undefined : vendedCredentialBookFor(options.settings);
    const book = this.vended;
    this.stores = book ? { ...options.stores, vendedCredentials: (location) => book.lookup(location) } : (options.stores ?? {});
  }

  /** Runs `body` with the table's files in the configured stores (the JDBC catalog's metadata too). */
  private inStores<T>(body: () => Promise<T>): Promise<T> {
    return withTableFileStores(this.stores, body);
  }

  private catalog(jobName: string, logger?: Logger): Promise<IcebergCatalog> {
    if (this.options.openCatalog) return this.options.openCatalog({ jobName, target: this.target });
    return openConfiguredCatalog(this.options.settings, this.options.environmentFile, { jobName, target: this.target }, this.options.env, {
      googleCredentialsWaitMs: this.options.googleCredentialsWaitMs,
      book: this.vended,
      logger,
    });
  }

  /** The table as the catalog has it now (undefined: none yet), the catalog closed after. */
  private loaded(jobName: string): Promise<LoadedTable | undefined> {
    return this.inStores(async () => {
      const catalog = await this.catalog(jobName);
      try {
        return await catalog.loadTable(this.table);
      } finally {
        await catalog.close();
      }
    });
  }

  /** `schema`: freeze unless the sink says add. */
  private get contract(): SchemaContract {
    return this.options.config.schema ?? 'freeze';
  }

  /** Whether the table carries the lineage columns (the modes that keep rows of earlier runs). */
  private get lineage(): boolean {
    return this.options.config.writeMode === 'append' || this.options.config.writeMode === 'merge';
  }

  private columnsOf(context: Pick<SinkRunContext, 'jobName' | 'columns'>): { name: string; type: (typeof context.columns)[number]['type'] }[] {
    const columns = context.columns.map((column) => ({ name: column.name, type: column.type }));
    if (this.lineage) {
      const clash = columns.find((column) => LINEAGE_COLUMNS.some((own) => own.name === column.name));
      if (clash)
        throw new IcebergSchemaMismatchError(
          this.target,
          `column ${clash.name} is a lineage column writeMode ${this.options.config.writeMode} adds itself; rename it in the job's columns`,
        );
    }
    return columns;
  }

  /** `partitionBy`, `primaryKey` and `latestBy` as the tile's output names (the config may name a header), each checked. */
  private modeOptions(context: Pick<SinkRunContext, 'jobName' | 'columns' | 'window'>): {
    partition?: DayPartitionOptions;
    mergeKey?: string[];
    latestBy?: string;
  } {
    const { config } = this.options;
    const named = (field: string, reference: string) => {
      const found = context.columns.find((column) => column.name === reference) ?? context.columns.find((column) => column.header === reference);
      if (found === undefined) throw new IcebergColumnError(context.jobName, this.target, field, reference, 'is not a column of the tile');
      return found;
    };
    if (config.writeMode === 'partition' && config.partitionBy !== undefined) {
      const column = named('partitionBy.column', config.partitionBy.column);
      if (column.type !== 'DATE' && column.type !== 'TIMESTAMP')
        throw new IcebergColumnError(
          context.jobName,
          this.target,
          'partitionBy.column',
          config.partitionBy.column,
          `is ${column.type}; a partition column is DATE or TIMESTAMP`,
        );
      // A window's every day is replaced, those it has no rows for too.
      return { partition: { column: column.name, ...(context.window ? { window: { from: context.window.from, to: context.window.to } } : {}) } };
    }
    if (config.writeMode === 'merge' && config.primaryKey !== undefined)
      return {
        mergeKey: config.primaryKey.map((reference, index) => {
          const column = named(`primaryKey[${index}]`, reference);
          if (column.type === 'FLOAT64')
            throw new IcebergColumnError(context.jobName, this.target, `primaryKey[${index}]`, reference, 'is FLOAT64, which cannot identify a row exactly');
          return column.name;
        }),
        // Any column's values order its rows (PostgreSQL's and BigQuery's latestBy take any type too).
        ...(config.latestBy === undefined ? {} : { latestBy: named('latestBy', config.latestBy).name }),
      };
    return {};
  }

  open(context: SinkRunContext): Promise<SinkWriter> {
    return this.inStores(() => this.opened(context));
  }

  private async opened(context: SinkRunContext): Promise<SinkWriter> {
    const columns = this.columnsOf(context);
    const modeOptions = this.modeOptions(context);
    const catalog = await this.catalog(context.jobName, context.logger);
    try {
      const start = {
        catalog,
        table: this.table,
        columns,
        runId: context.runId,
        housekeeping: housekeepingOf(this.options.settings),
        extractedAtMs: context.startedAt.getTime(),
        // The catalog vends credentials for a table's location only: a new table is created as the run opens, before its files.
        ...(this.vended ? {} : { newTableLocation: newTableLocation(this.options.settings, this.table) }),
        schema: this.contract,
        summary: {
          [SUMMARY_KEYS.startedAt]: context.startedAt.toISOString(),
          ...(context.definition ? { [SUMMARY_KEYS.definition]: JSON.stringify(context.definition) } : {}),
          ...(context.window
            ? {
                [SUMMARY_KEYS.windowFrom]: context.window.from,
                [SUMMARY_KEYS.windowTo]: context.window.to,
                [SUMMARY_KEYS.windowOpen]: String(context.window.open === true),
              }
            : {}),
        },
        ...modeOptions,
      };
      const { writeMode } = this.options.config;
      const run: PhasedRun =
        writeMode === 'partition' || writeMode === 'merge'
          ? await OverwriteRun.open({ ...start, mode: writeMode }, this.lineage ? [...columns, ...LINEAGE_COLUMNS] : columns)
          : await IcebergRun.open({ ...start, mode: writeMode });
      const replaced = (): ReplacedDays => {
        if (run.done) return { committed: run.done.snapshotId };
        const days = run.replacedDays;
        // The pipeline asks after prepare, when the run's days are known: before it is a bug.
        if (days === undefined) throw new Error(`Iceberg table ${this.target}: the publish guard was asked before prepare`);
        return { days };
      };
      return new IcebergWriter(this.target, catalog, run, context, this.guardOf(context, catalog, replaced), (body) => this.inStores(body));
    } catch (error) {
      await catalog.close();
      throw error;
    }
  }

  /**
   * Nothing: a killed run's files are unreferenced (no reader sees them), and the first commit after
   * they are older than `housekeeping.orphanMinAgeHours` deletes them (orphan-files.ts), a writer
   * still running its files never taken.
   */
  async sweep(): Promise<string[]> {
    return [];
  }

  /**
   * The table's files no snapshot references (a failed, refused or killed run's), each with the
   * commit that deletes it: the first after it is `housekeeping.orphanMinAgeHours` old. Reads only.
   */
  async leftovers({ jobName }: { jobName: string; logger: Logger }): Promise<LeftoverSurvey> {
    const where = `table ${this.target}`;
    try {
      return await this.inStores(async () => {
        const loaded = await this.loaded(jobName);
        if (loaded === undefined) return { where, found: [] };
        const { orphanMinAgeHours } = housekeepingPolicy(housekeepingOf(this.options.settings));
        const files = await unreferencedFilesOf(loaded);
        return {
          where,
          found: files.map((file) => ({
            what: `Iceberg file ${file.location}, which no snapshot references`,
            goes: Number.isFinite(orphanMinAgeHours)
              ? `deleted by the table's first commit (a run of any job writing it) after ${new Date(file.modifiedMs + orphanMinAgeHours * 3_600_000).toISOString()} (sinks.iceberg.housekeeping.orphanMinAgeHours ${orphanMinAgeHours})`
              : 'kept: the housekeeping deletes no orphan (sinks.iceberg.housekeeping.orphanMinAgeHours is off); remove it by hand',
          })),
        };
      });
    } catch (error) {
      return { where, unchecked: messageOf(error) };
    }
  }

  /** The table's schema against the tile's columns. Reads only. */
  async plan(context: SinkRunContext): Promise<SinkPlan> {
    const mode = this.options.config.writeMode === 'replace' ? {} : { mode: this.options.config.writeMode };
    let columns: ReturnType<IcebergSink['columnsOf']>;
    try {
      this.modeOptions(context);
      columns = [...this.columnsOf(context), ...(this.lineage ? LINEAGE_COLUMNS : [])];
    } catch (error) {
      if (!isTilehouseError(error)) throw error;
      return { sink: this.kind, target: this.target, ...mode, action: 'refuse', details: [`${error.code}: ${error.message}`] };
    }
    const loaded = await this.loaded(context.jobName);
    if (!loaded)
      return {
        sink: this.kind,
        target: this.target,
        ...mode,
        action: 'create',
        details: columns.map((column) => `+ ${column.name} ${icebergTypeOf(column.type)}`),
      };
    const diff = schemaDiff(currentSchema(loaded.metadata), columns);
    const refused = refusalOf(diff, this.contract);
    if (refused) return { sink: this.kind, target: this.target, ...mode, action: 'refuse', details: [...diffLines(diff), refused.hint] };
    if (diff.added.length === 0) return { sink: this.kind, target: this.target, ...mode, action: 'unchanged', details: [] };
    return { sink: this.kind, target: this.target, ...mode, action: 'change', details: diffLines(diff) };
  }

  /**
   * The catalog answers, the namespace is there (or a run creates it with the table), and the
   * table's location (a new table's: the warehouse root) takes a file: one written and removed.
   */
  checkAccess(context: AccessCheckContext): Promise<string | undefined> {
    return this.inStores(() => this.accessChecked(context));
  }

  private async accessChecked(context: AccessCheckContext): Promise<string | undefined> {
    const catalog = await this.catalog(context.jobName, context.logger);
    try {
      // The catalog's own privileges first: a run without them writes its files and then fails its commit.
      const privileges = await catalog.checkPrivileges?.();
      const loaded = await catalog.loadTable(this.table);
      const namespace = loaded ? true : await catalog.namespaceExists(this.table.namespace);
      const where = loaded
        ? childLocation(loaded.metadata.location, 'metadata')
        : newTableLocation(this.options.settings, this.table).replace(/\/[^/]+\/[^/]+$/, '');
      const table = loaded
        ? `table exists at ${loaded.metadata.location}`
        : `table absent; a run creates it at ${newTableLocation(this.options.settings, this.table)}${namespace ? '' : ` with namespace ${this.table.namespace}`}`;
      const access =
        this.vended && !loaded
          ? // No table, no credentials: the catalog vends them for the table it creates.
            `the catalog vends the credentials its files are written with when a run creates it`
          : await this.probed(where);
      return `iceberg ${catalog.description} ${this.target}: ${table}; ${access}${privileges === undefined ? '' : `; ${privileges}`}`;
    } finally {
      await catalog.close();
    }
  }

  /** A file written below `where` and removed: the location takes the table's files (with the vended credentials when there are). */
  private async probed(where: string): Promise<string> {
    const probe = childLocation(where, `.tilehouse-access-${randomUUID()}`);
    await writeNewFile(probe, [Buffer.from('tilehouse check\n')]);
    await removeLocation(probe);
    return `${where} is writable${this.vended?.holds(this.target) ? ' with the credentials the catalog vended' : ''}`;
  }

  /** The table's location as a new table's would be (no network: an existing table's may differ; the writer names that one). */
  async plannedDataset(_context: PlannedDatasetContext): Promise<PlannedDataset> {
    return icebergLineageDataset(newTableLocation(this.options.settings, this.table));
  }

  storedSchema(context: Pick<SinkRunContext, 'jobName' | 'columns' | 'window'>): StoredSchema {
    try {
      this.modeOptions(context);
      const columns = [...this.columnsOf(context), ...(this.lineage ? LINEAGE_COLUMNS : [])];
      return { fields: columns.map((column) => ({ name: column.name, type: icebergTypeOf(column.type) })) };
    } catch (error) {
      if (!isTilehouseError(error)) throw error;
      return { unknown: `no table is written for these columns: ${error.message}` };
    }
  }

  /** The current snapshot's run, time and rows, from the table's metadata: no data read. */
  async publication(context: SinkRunContext): Promise<TargetPublication> {
    try {
      const loaded = await this.loaded(context.jobName);
      if (!loaded) return { sink: this.kind, target: this.target, state: 'none', readFrom: 'no table yet' };
      const snapshot = currentSnapshot(loaded.metadata);
      if (!snapshot)
        return { sink: this.kind, target: this.target, state: 'unrecorded', rows: 0, readFrom: 'table metadata', note: 'the table has no snapshot yet' };
      const rows = Number(snapshot.summary['total-records'] ?? Number.NaN);
      const runId = snapshot.summary[RUN_ID_SUMMARY_KEY];
      const at = snapshot.summary[SUMMARY_KEYS.startedAt] ?? new Date(Number(snapshot['timestamp-ms'])).toISOString();
      if (runId === undefined)
        return {
          sink: this.kind,
          target: this.target,
          state: 'unrecorded',
          at,
          ...(Number.isFinite(rows) ? { rows } : {}),
          readFrom: 'table metadata',
          note: `its current snapshot ${snapshot['snapshot-id']} was not committed by tilehouse (no ${RUN_ID_SUMMARY_KEY} in its summary)`,
        };
      const definition = definitionOf(snapshot);
      return {
        sink: this.kind,
        target: this.target,
        state: 'written',
        runId,
        at,
        ...(Number.isFinite(rows) ? { rows } : {}),
        ...(definition === undefined ? {} : { definition }),
        readFrom: 'the snapshot summary',
      };
    } catch (error) {
      return { sink: this.kind, target: this.target, state: 'unreadable', readFrom: 'unreadable', note: messageOf(error) };
    }
  }

  guardCheck(context: SinkRunContext, exported?: { rows: readonly TypedRow[] }): GuardCheck {
    // No run yet: a partition run's days are its window's when it has one, else its rows', known
    // when the caller has every row a run would write (a tile of one page), as the run knows them.
    const window = context.window;
    return this.guardOf(context, undefined, () => {
      if (window) return { days: daysOfWindow(window) };
      if (exported === undefined) return { unknown: 'the days a run replaces are known only from its rows' };
      try {
        const column = this.modeOptions(context).partition?.column;
        const index = context.columns.findIndex((candidate) => candidate.name === column);
        // modeOptions found the column and checked its type.
        const type = context.columns[index]?.type as 'DATE' | 'TIMESTAMP' | undefined;
        if (column === undefined || type === undefined) return { unknown: 'the days a run replaces are known only from its rows' };
        return { days: daysOfRows(exported.rows, { column, index, type }) };
      } catch (error) {
        if (!isTilehouseError(error)) throw error;
        return { unknown: `a run would refuse its rows: ${error.message}` };
      }
    });
  }

  private guardOf(context: Pick<SinkRunContext, 'jobName'>, open: IcebergCatalog | undefined, replaced: () => ReplacedDays): GuardCheck {
    const { writeMode } = this.options.config;
    return {
      settings: this.options.guard,
      holding: () =>
        // The JDBC catalog's metadata and the manifests are read through the table's stores.
        this.inStores(async () => {
          const loaded = open ? await open.loadTable(this.table) : await this.loaded(context.jobName);
          const recent = this.options.guard?.recentRuns ?? 0;
          return icebergHolding(this.target, writeMode, loaded?.metadata, recent, writeMode === 'partition' ? replaced() : undefined);
        }),
    };
  }
}

/**
 * The days a `partition` publish replaces, as the guard is told them: the run's (after its prepare),
 * why they are not known (no run, no window), or the snapshot an earlier run of this run id
 * committed (the publish commits nothing, so replaces nothing).
 */
export type ReplacedDays = { days: ReadonlySet<number> } | { unknown: string } | { committed: bigint };

/**
 * What the table holds for the publish guard, from its metadata: no data file read. `replace`: the
 * current snapshot's `total-records`; `partition`: the rows of exactly the days the run replaces,
 * summed from the current snapshot's manifests (days-held.ts); `append`, `merge`: nothing removed.
 * The history rule's recent runs are the `added-records` of tilehouse's snapshots.
 */
export async function icebergHolding(
  target: string,
  mode: IcebergSinkConfig['writeMode'],
  metadata: TableMetadata | undefined,
  recent: number,
  replaced?: ReplacedDays,
): Promise<TargetHolding> {
  const readFrom = 'snapshot summary';
  if (!metadata) return { target, effect: mode === 'append' ? 'add' : 'replace', rows: undefined, readFrom };
  const chain = snapshotChain(metadata);
  const current = chain[0];
  const runs = chain
    .filter((snapshot) => snapshot.summary[RUN_ID_SUMMARY_KEY] !== undefined && snapshot.summary[SUMMARY_KEYS.windowOpen] !== 'true')
    .slice(0, recent)
    .map((snapshot) => Number(snapshot.summary['added-records'] ?? Number.NaN))
    .filter((rows) => Number.isFinite(rows));
  const runId = current?.summary[RUN_ID_SUMMARY_KEY];
  const definition = definitionOf(current);
  const writtenBy = runId === undefined ? {} : { writtenBy: { runId, ...(definition === undefined ? {} : { definition }) } };
  const history = { ...(runs.length > 0 ? { recentRuns: runs } : {}), ...writtenBy };
  if (mode === 'append' || mode === 'merge') return { target, effect: 'add', rows: undefined, readFrom, ...history };
  if (!current) return { target, effect: 'replace', rows: undefined, readFrom, ...history };
  if (mode === 'partition') return partitionHolding(target, metadata, chain, replaced, history);
  const total = current.summary['total-records'];
  if (total === undefined)
    return { target, effect: 'replace', rows: undefined, readFrom, unreadable: 'its current snapshot has no total-records in its summary', ...history };
  return { target, effect: 'replace', rows: Number(total), readFrom, ...history };
}

async function partitionHolding(
  target: string,
  metadata: TableMetadata,
  chain: readonly Snapshot[],
  replaced: ReplacedDays | undefined,
  history: Pick<TargetHolding, 'recentRuns' | 'writtenBy'>,
): Promise<TargetHolding> {
  const { writtenBy } = history;
  const known = writtenBy === undefined ? {} : { writtenBy };
  if (replaced === undefined || 'unknown' in replaced)
    return {
      target,
      effect: 'replace',
      rows: undefined,
      readFrom: 'days',
      unreadable: replaced?.unknown ?? 'the days a run replaces are known only from its rows',
      ...known,
    };
  // The table holds this run id's snapshot already: the publish commits nothing, so it removes nothing.
  if ('committed' in replaced) return { target, effect: 'add', rows: undefined, readFrom: `snapshot ${replaced.committed} of this run id`, ...known };
  if (replaced.days.size === 0) return { target, effect: 'replace', rows: 0, readFrom: 'no day replaced', ...history };
  const readFrom = `manifest record counts of ${daysShown(replaced.days)}`;
  const held = await rowsInDays(target, metadata, replaced.days);
  if ('unreadable' in held) return { target, effect: 'replace', rows: undefined, readFrom, unreadable: held.unreadable, ...known };
  // What changed is told against the newest run that wrote these days (another window's run changed nothing of them).
  const writer = chain.find((snapshot) => held.addedBy.has(snapshot['snapshot-id']));
  const runId = writer?.summary[RUN_ID_SUMMARY_KEY];
  const definition = definitionOf(writer);
  const wroteThem = runId === undefined ? known : { writtenBy: { runId, ...(definition === undefined ? {} : { definition }) } };
  return { target, effect: 'replace', rows: held.rows, readFrom, ...(history.recentRuns ? { recentRuns: history.recentRuns } : {}), ...wroteThem };
}

/** The snapshots `main` reaches, newest first. */
export function snapshotChain(metadata: TableMetadata): Snapshot[] {
  const byId = new Map((metadata.snapshots ?? []).map((snapshot) => [snapshot['snapshot-id'], snapshot]));
  const chain: Snapshot[] = [];
  for (let snapshot = currentSnapshot(metadata); snapshot !== undefined; ) {
    chain.push(snapshot);
    const parent = snapshot['parent-snapshot-id'];
    snapshot = parent === undefined || parent === null ? undefined : byId.get(parent);
  }
  return chain;
}

/** A plan's lines for a schema diff: `+ team string`, `- owner string`, `~ number: long in the table, double from the tile`. */
function diffLines(diff: SchemaDiff): string[] {
  return [
    ...diff.added.map((field) => `+ ${field.name} ${field.type}`),
    ...diff.removed.map((field) => `- ${field.name} ${field.type} (the tile has no such column)`),
    ...diff.retyped.map((change) => `~ ${change.name}: ${change.from} in the table, ${change.to} from the tile`),
  ];
}

type RunResult = { committed: boolean; snapshotId: bigint; rows: number; tries: number; housekeeping?: HousekeepingReport; addedColumns?: string[] };

/** IcebergRun (replace, append) and OverwriteRun (partition, merge), as the writer drives them. */
type PhasedRun = Pick<IcebergRun, 'location' | 'writeRows' | 'stage' | 'discard' | 'outcomeUnknown' | 'files'> & {
  readonly done: RunResult | undefined;
  /** `partition`, after `stage`: the days the run replaces. */
  readonly replacedDays?: ReadonlySet<number> | undefined;
  commit(): Promise<RunResult>;
};

/** One run's writer: rows into the run's data file as they arrive, the manifest in prepare, the commit in publish. */
class IcebergWriter implements SinkWriter {
  readonly lineageDataset: LineageDatasetName;
  private rows = 0;
  private closed = false;

  constructor(
    readonly target: string,
    private readonly catalog: IcebergCatalog,
    private readonly run: PhasedRun,
    private readonly context: SinkRunContext,
    readonly guard: GuardCheck,
    /** Runs a step with the table's files in the sink's stores. */
    private readonly inStores: <T>(body: () => Promise<T>) => Promise<T>,
  ) {
    this.lineageDataset = icebergLineageDataset(run.location);
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    this.rows += rows.length;
    // The table holds this run already: its rows are counted, not written.
    if (this.run.done) return;
    await this.inStores(() => this.run.writeRows(rows));
  }

  async prepare(): Promise<void> {
    if (this.run.done) return;
    await this.inStores(() => this.run.stage());
  }

  publish(): Promise<SinkResult> {
    return this.inStores(() => this.published());
  }

  /** Whether a snapshot of the table (as its catalog has it now) carries this run id: the snapshots the housekeeping keeps tell. */
  async heldRun(): Promise<RunHeld> {
    const base = { sink: 'iceberg' as const, target: this.target };
    // In the sink's stores, as every other read: loading a table reads its metadata file, and an s3:// one needs the sink's endpoint.
    const loaded = await this.inStores(() => this.catalog.loadTable(tableIdentifierOf(this.target)));
    const snapshot = loaded === undefined ? undefined : snapshotOfRun(loaded.metadata, this.context.runId);
    if (snapshot === undefined) return { ...base, held: 'no', readFrom: 'its snapshots' };
    const rows = snapshot.summary['added-records'];
    return { ...base, held: 'yes', ...(rows === undefined ? {} : { rows: Number(rows) }), readFrom: `its snapshot ${snapshot['snapshot-id']}` };
  }

  private async published(): Promise<SinkResult> {
    try {
      const result = this.run.done ?? (await this.run.commit());
      const details = {
        snapshotId: result.snapshotId.toString(),
        tries: result.tries,
        catalog: this.catalog.description,
        // As the BigQuery sink says it; only when the commit added fields (schema: add).
        ...(result.addedColumns === undefined ? {} : { schemaAction: `added:${result.addedColumns.join(',')}` }),
      };
      if (result.committed)
        return { sink: 'iceberg', target: this.target, rows: result.rows, ...housekeepingReported(this.target, details, result.housekeeping) };
      // An earlier run of this run id committed: the table keeps that snapshot.
      const loaded = await this.catalog.loadTable(tableIdentifierOf(this.target));
      const earlier = loaded?.metadata.snapshots?.find((snapshot) => snapshot['snapshot-id'] === result.snapshotId);
      const rows = Number(earlier?.summary['added-records'] ?? this.rows);
      return {
        sink: 'iceberg',
        target: this.target,
        rows,
        adopted: true,
        details: { ...details, adopted: true },
        ...(rows === this.rows ? {} : { keptEarlierPublish: true }),
      };
    } catch (error) {
      if (this.run.outcomeUnknown) throw new IcebergPublishOutcomeUnknownError(this.context.jobName, this.target, this.context.runId, error);
      throw error;
    } finally {
      await this.close();
    }
  }

  async abort(): Promise<void> {
    await this.inStores(() => this.run.discard());
    await this.close();
  }

  leftBehind(): string[] {
    if (this.run.outcomeUnknown) return [];
    // Said with how it goes: no snapshot references it, so the housekeeping of a later commit deletes it once old enough.
    return this.run
      .files()
      .map(
        (file) =>
          `Iceberg file ${file}, which no snapshot references (the table's first commit after it is sinks.iceberg.housekeeping.orphanMinAgeHours old deletes it)`,
      );
  }

  private async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.catalog.close();
  }
}

/** `sinks.iceberg.housekeeping`'s values that are set: the writer takes its defaults for the others. */
function housekeepingOf(settings: IcebergDefaults): Partial<IcebergHousekeepingPolicy> {
  return Object.fromEntries(Object.entries(settings.housekeeping ?? {}).filter(([, value]) => value !== undefined));
}

/**
 * What the commit's housekeeping did, for the run's result: the snapshots it expired, the files it
 * deleted and the unfinished uploads it aborted (when any) as details, and what it could not do as warnings (left for the next run, never a failure:
 * the run's snapshot is committed).
 */
function housekeepingReported(
  target: string,
  details: NonNullable<SinkResult['details']>,
  report: HousekeepingReport | undefined,
): Pick<SinkResult, 'details' | 'warnings'> {
  if (report === undefined) return { details };
  return {
    details: {
      ...details,
      expiredSnapshots: report.expiredSnapshots,
      deletedFiles: report.deletedFiles.length,
      ...(report.abortedUploads.length > 0 ? { abortedUploads: report.abortedUploads.length } : {}),
    },
    ...(report.failures.length === 0 ? {} : { warnings: report.failures.map((failure) => `iceberg ${target}: housekeeping left behind: ${failure}`) }),
  };
}
