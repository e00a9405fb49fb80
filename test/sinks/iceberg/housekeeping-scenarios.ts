import { readdir, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { IcebergCatalog, TableIdentifier } from '../../../src/sinks/iceberg/catalog.js';
import { DEFAULT_HOUSEKEEPING, HOUSEKEEPING_OFF, type IcebergHousekeepingPolicy } from '../../../src/sinks/iceberg/expire-snapshots.js';
import { localPathOf } from '../../../src/sinks/iceberg/local-files.js';
import { referencesOf } from '../../../src/sinks/iceberg/orphan-files.js';
import { writeIcebergRun } from '../../../src/sinks/iceberg/table-writer.js';
import { readIceberg } from '../../support/iceberg-readers.js';
import { asText, COLUMNS, readBoth, rowsOf, sortedLines } from './iceberg-test-rows.js';
import { killWriterAt } from './killed-writer.js';
import type { KilledWriterRequest } from './killed-writer-child.js';
import type { WriterContext } from './writer-scenarios.js';

/**
 * Housekeeping's scenarios, run against each catalog: snapshot expiry on a simulated year of
 * nightly replaces, the orphan sweep's age rule, and a writer killed at chosen moments.
 */
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const READS_TIMEOUT_MS = 240_000;
const NIGHTS = 365;

/** What a table holds on disk: every file under its location (Hadoop's `.crc` files included), and their bytes. */
export async function filesOnDisk(location: string): Promise<{ files: string[]; bytes: number }> {
  const root = localPathOf(location);
  const names = await readdir(root, { recursive: true }).catch(() => [] as string[]);
  const files: string[] = [];
  let bytes = 0;
  for (const name of names) {
    const info = await stat(join(root, name));
    if (!info.isFile()) continue;
    files.push(join(root, name));
    bytes += info.size;
  }
  return { files: files.sort(), bytes };
}

/** The table's files on disk that its metadata does not reference (a `.name.crc` counts as its `name`). */
async function unreferencedFiles(catalog: IcebergCatalog, table: TableIdentifier): Promise<string[]> {
  const loaded = (await catalog.loadTable(table))!;
  const { files: referenced } = await referencesOf(loaded);
  const { files } = await filesOnDisk(loaded.metadata.location);
  return files.filter((path) => !referenced.has(path.replace(/\/\.([^/]+)\.crc$/, '/$1')));
}

interface YearFigures {
  snapshots: number;
  files: number;
  bytes: number;
  metadataJsonBytes: number;
}

/** Replaces `table` nightly for a year on a fake clock (night i at `start + i` days); the figures at the end. */
async function simulateYear(catalog: IcebergCatalog, table: TableIdentifier, housekeeping: IcebergHousekeepingPolicy, start: number) {
  const metadataBytesAt: number[] = [];
  for (let night = 0; night < NIGHTS; night++) {
    const result = await writeIcebergRun({
      catalog,
      table,
      columns: COLUMNS,
      rows: [rowsOf(night * 3, 3)],
      mode: 'replace',
      runId: `night-${night}`,
      housekeeping,
      now: () => start + night * DAY_MS,
    });
    expect(result.committed).toBe(true);
    expect(result.housekeeping?.failures).toEqual([]);
    metadataBytesAt.push((await stat(localPathOf(result.metadataLocation))).size);
  }
  const loaded = (await catalog.loadTable(table))!;
  const { files, bytes } = await filesOnDisk(loaded.metadata.location);
  const figures: YearFigures = {
    snapshots: loaded.metadata.snapshots?.length ?? 0,
    files: files.length,
    bytes,
    metadataJsonBytes: metadataBytesAt.at(-1)!,
  };
  return { loaded, figures, metadataBytesAt };
}

/** The test file's catalog, and how a child process opens the same one (killed-writer-child.ts). */
export interface HousekeepingContext extends WriterContext {
  childCatalog: KilledWriterRequest['catalog'];
}

export function housekeepingScenarios(python: string, context: () => HousekeepingContext): void {
  const where = (table: string) => {
    const { pyCatalog, catalogName } = context();
    return { catalog: pyCatalog, table, ...(catalogName === undefined ? {} : { catalogName }) };
  };

  it(
    'a table replaced nightly for a simulated year keeps the policy’s snapshots and exactly the files its metadata references; pyiceberg and DuckDB read it, and travel to a kept snapshot',
    async () => {
      const { catalog } = context();
      // The year ends now: catalogs refuse a snapshot far in their future.
      const start = Date.now() - NIGHTS * DAY_MS;
      const table = { namespace: 'year', name: 'kept' };
      const { loaded, figures, metadataBytesAt } = await simulateYear(catalog, table, DEFAULT_HOUSEKEEPING, start);
      const baseline = await simulateYear(catalog, { namespace: 'year', name: 'unkept' }, HOUSEKEEPING_OFF, start);
      console.info(
        `${catalog.description.split(' ')[0]} simulated year of nightly replaces: with housekeeping ${JSON.stringify(figures)}; without ${JSON.stringify(baseline.figures)}; bytes ratio ${(figures.bytes / baseline.figures.bytes).toFixed(4)}`,
      );

      expect(figures.snapshots).toBe(DEFAULT_HOUSEKEEPING.keepSnapshots);
      expect(baseline.figures.snapshots).toBe(NIGHTS);
      expect(await unreferencedFiles(catalog, table)).toEqual([]);
      // Each kept snapshot: a data file, a manifest, a manifest list; the metadata files: the current one and its log.
      expect(loaded.metadata['metadata-log']).toHaveLength(DEFAULT_HOUSEKEEPING.previousMetadataVersions);
      const { files: referenced } = await referencesOf(loaded);
      expect(referenced.size).toBe(3 * DEFAULT_HOUSEKEEPING.keepSnapshots + 1 + DEFAULT_HOUSEKEEPING.previousMetadataVersions);
      // The metadata file stops growing once the policy's windows are full (by night 20).
      expect(Math.max(...metadataBytesAt.slice(20))).toBeLessThanOrEqual(metadataBytesAt[20]! + 64);
      expect(figures.bytes * 10).toBeLessThan(baseline.figures.bytes);

      const last = rowsOf((NIGHTS - 1) * 3, 3).map(asText);
      const { pyiceberg, duckdb } = await readBoth(python, where('year.kept'));
      expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(last));
      expect(sortedLines(duckdb.rows)).toEqual(sortedLines(last));
      const history = await readIceberg(python, 'pyiceberg-table', where('year.kept'));
      expect(history.snapshots.map((s) => s.summary['tilehouse.run-id'])).toEqual(Array.from({ length: 10 }, (_, index) => `night-${NIGHTS - 10 + index}`));
      const oldest = history.snapshots[0]!;
      const travelled = await readIceberg(python, 'pyiceberg-scan', { ...where('year.kept'), snapshotId: oldest.id });
      expect(sortedLines(travelled.rows)).toEqual(sortedLines(rowsOf((NIGHTS - 10) * 3, 3).map(asText)));

      // A re-run of a kept night's run id commits nothing.
      const again = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [rowsOf(0, 1)],
        mode: 'replace',
        runId: `night-${NIGHTS - 3}`,
        now: () => start + NIGHTS * DAY_MS,
      });
      expect(again.committed).toBe(false);
    },
    20 * 60_000,
  );

  it(
    'an unreferenced file is deleted by the next run only when older than orphanMinAgeHours: another writer’s fresh file survives',
    async () => {
      const { catalog } = context();
      const table = { namespace: 'sweep', name: 'aged' };
      const now = Date.now();
      await writeIcebergRun({ catalog, table, columns: COLUMNS, rows: [rowsOf(0, 2)], mode: 'replace', runId: 'one' });
      const location = (await catalog.loadTable(table))!.metadata.location;
      const root = localPathOf(location);
      const fresh = [join(root, 'data', 'in-flight.parquet'), join(root, 'metadata', 'in-flight-m0.avro')];
      const old = [join(root, 'data', 'left-by-a-killed-run.parquet'), join(root, 'metadata', 'snap-left-behind.avro')];
      for (const path of [...fresh, ...old]) await writeFile(path, 'x');
      const fourDaysAgo = new Date(now - 4 * DAY_MS);
      for (const path of old) await utimes(path, fourDaysAgo, fourDaysAgo);
      const two = await writeIcebergRun({
        catalog,
        table,
        columns: COLUMNS,
        rows: [rowsOf(5, 2)],
        mode: 'replace',
        runId: 'two',
        filesNow: () => now + HOUR_MS,
      });
      expect(two.housekeeping?.deletedFiles).toEqual(expect.arrayContaining(old));
      const left = await unreferencedFiles(catalog, table);
      expect(left.sort()).toEqual([...fresh].sort());
      const { pyiceberg, duckdb } = await readBoth(python, where('sweep.aged'));
      expect(sortedLines(pyiceberg.rows)).toEqual(sortedLines(rowsOf(5, 2).map(asText)));
      expect(sortedLines(duckdb.rows)).toEqual(sortedLines(pyiceberg.rows));
    },
    READS_TIMEOUT_MS,
  );

  const moments = {
    'data-file': 'after its data file',
    'manifest-list': 'after its manifest list, before its commit',
    'commit-sent': 'while its commit is under way',
    committed: 'after its commit landed, before its cleanup',
  } as const;
  for (const pause of Object.keys(moments) as (keyof typeof moments)[]) {
    it(
      `a writer killed (SIGKILL) ${moments[pause]}: the table is the previous snapshot or the new one, both readers agree, and the next run removes what it left once old enough`,
      async () => {
        const { catalog } = context();
        const table = { namespace: 'killed', name: pause.replace('-', '_') };
        const now = Date.now();
        const policy = { keepSnapshots: 1, maxSnapshotAgeDays: 0 };
        await writeIcebergRun({
          catalog,
          table,
          columns: COLUMNS,
          rows: [rowsOf(0, 4)],
          mode: 'replace',
          runId: 'before',
          housekeeping: policy,
        });
        await killWriterAt({ catalog: context().childCatalog, table, runId: 'killed', first: 40, count: 6, pause });
        const [previous, killed] = [rowsOf(0, 4), rowsOf(40, 6)].map((rows) => sortedLines(rows.map(asText)));
        const { pyiceberg, duckdb } = await readBoth(python, where(`killed.${table.name}`));
        const read = sortedLines(pyiceberg.rows);
        // A commit under way when the writer died may have landed or not; any other moment is known.
        if (pause === 'commit-sent') expect([previous, killed]).toContainEqual(read);
        else expect(read).toEqual(pause === 'committed' ? killed : previous);
        expect(sortedLines(duckdb.rows)).toEqual(read);
        const left = await unreferencedFiles(catalog, table);
        expect(left.length).toBeGreaterThan(0);

        // The next run, within the safety age: what the killed run left may be in flight, so it stays.
        await writeIcebergRun({
          catalog,
          table,
          columns: COLUMNS,
          rows: [rowsOf(80, 2)],
          mode: 'replace',
          runId: 'next',
          housekeeping: policy,
          filesNow: () => now + HOUR_MS,
        });
        expect(await unreferencedFiles(catalog, table)).toEqual(expect.arrayContaining(left));
        // A run past the safety age (an injected clock for the files' ages; the catalog's own
        // clock refuses a snapshot from its future): every file left is gone, the table whole.
        const later = now + (DEFAULT_HOUSEKEEPING.orphanMinAgeHours + 1) * HOUR_MS;
        const after = await writeIcebergRun({
          catalog,
          table,
          columns: COLUMNS,
          rows: [rowsOf(90, 3)],
          mode: 'replace',
          runId: 'later',
          housekeeping: policy,
          filesNow: () => later,
        });
        expect(after.housekeeping?.deletedFiles).toEqual(expect.arrayContaining(left));
        expect(await unreferencedFiles(catalog, table)).toEqual([]);
        const reread = await readBoth(python, where(`killed.${table.name}`));
        expect(sortedLines(reread.pyiceberg.rows)).toEqual(sortedLines(rowsOf(90, 3).map(asText)));
        expect(sortedLines(reread.duckdb.rows)).toEqual(sortedLines(reread.pyiceberg.rows));
      },
      READS_TIMEOUT_MS,
    );
  }
}
