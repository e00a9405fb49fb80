import { randomUUID } from 'node:crypto';
import type { TypedRow } from '../../transform/column.js';
import { formatCivilDate } from '../../value-types/civil-date.js';
import type { ParquetColumnSpec } from '../parquet/encoder/parquet-encoder.js';
import { DataFileEncoder } from './data-file-encoder.js';
import { HandoffChannel } from './handoff-channel.js';
import { childLocation, removeLocation, writeNewFile } from './local-files.js';
import type { AddedDataFile } from './manifests.js';
import { type DayLayout, dayOfRow } from './partition-spec.js';

/**
 * `writeMode: partition`'s data files: one Parquet file per day the run has rows for, under
 * `data/<field>=<day>/` (Java's layout), each written as its rows stream by through the table's
 * store (a local file, or an object on gs:// or s3://), so a run over many days holds one
 * encoder's row group per day in memory, not the run (and on S3 one part buffer per day).
 */
interface DayFile {
  location: string;
  encoder: DataFileEncoder;
  pieces: HandoffChannel<Uint8Array>;
  /** The file being written: its size once the pieces end. */
  writing: Promise<number>;
}

export async function writeDayFiles(options: {
  tableLocation: string;
  runId: string;
  layout: DayLayout;
  column: string;
  columns: readonly (ParquetColumnSpec & { fieldId: number })[];
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
    const pieces = new HandoffChannel<Uint8Array>();
    const writing = writeNewFile(location, pieces);
    // Its failure is the next write's or the finish's; never an unhandled rejection meanwhile.
    writing.catch(() => undefined);
    const file = { location, encoder: new DataFileEncoder(options.columns), pieces, writing };
    byDay.set(day, file);
    return file;
  };
  // Each push waits until the file took the pieces, or fails with the file's own failure.
  const write = async (file: DayFile, pieces: Uint8Array[]) => {
    await Promise.race([file.pieces.push(pieces), file.writing.then(() => undefined)]);
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
      file.pieces.end();
      const size = await file.writing;
      files.push({
        path: file.location,
        recordCount: BigInt(file.encoder.rowCount),
        sizeInBytes: BigInt(size),
        partition: { [layout.field.name]: day },
        metrics: file.encoder.metrics(),
      });
    }
    return { files, days: new Set(byDay.keys()) };
  } catch (error) {
    await Promise.allSettled(
      [...byDay.values()].map(async (file) => {
        file.pieces.fail(error instanceof Error ? error : new Error(String(error)));
        await file.writing.catch(() => undefined);
        await removeLocation(file.location);
      }),
    );
    throw error;
  }
}
