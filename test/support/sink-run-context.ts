import type { Sink, SinkRunContext, SinkWriter } from '../../src/sinks/sink.js';
import type { Column, TypedRow } from '../../src/transform/column.js';
import type { ColumnType } from '../../src/value-types/column-types.js';
import { silentLogger } from './fake-sinks.js';

/** A column whose header is its name: what the warehouse sinks' tests write. */
export function column(name: string, type: ColumnType): Column {
  return { name, header: name, type, sourceDataType: type === 'STRING' ? 'text' : 'number' };
}

/** A run of the job `open_incidents` (tile `tile-42`) with a fresh run id, started 2024-03-01 12:00 UTC, silent. */
export function runContext(overrides: Partial<SinkRunContext> & { columns: readonly Column[] }): SinkRunContext {
  return {
    jobName: 'open_incidents',
    tileId: 'tile-42',
    runId: `run-${Math.random().toString(36).slice(2, 10)}`,
    startedAt: new Date('2024-03-01T12:00:00.000Z'),
    logger: silentLogger,
    ...overrides,
  };
}

/** Opens a writer of any sink, writes the pages, prepares; aborts on failure. The caller publishes or aborts. */
export async function prepareSink(sink: Pick<Sink, 'open'>, context: SinkRunContext, pages: readonly (readonly TypedRow[])[]): Promise<SinkWriter> {
  const writer = await sink.open(context);
  try {
    for (const page of pages) await writer.writeRows(page);
    await writer.prepare();
    return writer;
  } catch (error) {
    await writer.abort();
    throw error;
  }
}
