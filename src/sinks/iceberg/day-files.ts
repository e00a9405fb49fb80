import { randomUUID } from 'node:crypto';
import { mkdir, open, rm } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { TypedRow } from '../../transform/column.js';
import { formatCivilDate } from '../../value-types/civil-date.js';
import { ParquetEncoder, type ParquetColumnSpec } from '../parquet/encoder/parquet-encoder.js';
import { childLocation, localPathOf } from './local-files.js';
import type { AddedDataFile } from './manifests.js';
import { type DayLayout, dayOfRow } from './partition-spec.js';

/**
 * `writeMode: partition`'s data files: one Parquet file per day the run has rows for, under
 * `data/<field>=<day>/` (Java's layout), each written as its rows stream by, so a run over many
 * days holds one encoder's row group per day in memory, not the run.
 */
interface DayFile {
  location: string;
  encoder: ParquetEncoder;
  handle: FileHandle;
  size: number;
}

export async function writeDayFiles(options: {
  tableLocation: string;
  runId: string;
  layout: DayLayout;
  column: string;
  columns: readonly ParquetColumnSpec[];
  rows: AsyncIterable<readonly TypedRow[]> | Iterable<readonly TypedRow[]>;
  /** Every file's location is pushed here before its first byte, so a failure removes it. */
  written: string[];
}): Promise<{ files: AddedDataFile[]; days: Set<number> }> {
  const { layout } = options;
  const byDay = new Map<number, DayFile>();
  const fileOf = async (day: number): Promise<DayFile> => {
    const open_ = byDay.get(day);
    if (open_) return open_;
    const location = childLocation(
      options.tableLocation,
      `data/${layout.field.name}=${formatCivilDate(day)}/${options.runId.replaceAll(/[^\w.-]/g, '_')}-${randomUUID()}.parquet`,
    );
    options.written.push(location);
    const path = localPathOf(location);
    await mkdir(dirname(path), { recursive: true });
    const file = { location, encoder: new ParquetEncoder(options.columns), handle: await open(path, 'wx'), size: 0 };
    byDay.set(day, file);
    return file;
  };
  const write = async (file: DayFile, pieces: Uint8Array[]) => {
    for (const piece of pieces) {
      await file.handle.write(piece);
      file.size += piece.length;
    }
  };
  try {
    for await (const batch of options.rows) {
      const groups = new Map<number, TypedRow[]>();
      for (const row of batch) {
        const day = dayOfRow(layout, options.column, row[layout.index] ?? null);
        const group = groups.get(day);
        if (group) group.push(row as TypedRow);
        else groups.set(day, [row as TypedRow]);
      }
      for (const [day, rows] of groups) {
        const file = await fileOf(day);
        await write(file, file.encoder.addRows(rows));
      }
    }
    const files: AddedDataFile[] = [];
    for (const [day, file] of [...byDay].sort(([a], [b]) => a - b)) {
      await write(file, file.encoder.finish());
      await file.handle.sync();
      await file.handle.close();
      files.push({ path: file.location, recordCount: BigInt(file.encoder.rowCount), sizeInBytes: BigInt(file.size), partition: { [layout.field.name]: day } });
    }
    return { files, days: new Set(byDay.keys()) };
  } catch (error) {
    await Promise.allSettled(
      [...byDay.values()].map(async (file) => {
        await file.handle.close();
        await rm(localPathOf(file.location), { force: true });
      }),
    );
    throw error;
  }
}
