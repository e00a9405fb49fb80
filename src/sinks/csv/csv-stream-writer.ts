import type { Writable } from 'node:stream';
import type { Column, TypedRow } from '../../transform/column.js';
import type { SinkResult, SinkWriter } from '../sink.js';
import { drained, encodedChunks, headerRecord } from './csv-chunks.js';
import { CsvWriterClosedError } from './csv-errors.js';
import { CsvRecordEncoder } from './csv-record-encoder.js';

export type CsvWriterState = 'open' | 'preparing' | 'prepared' | 'publishing' | 'published' | 'failed' | 'aborted';

/**
 * What the local file writer and the Cloud Storage object writer share, so that their bytes and
 * their phases cannot drift apart: typed rows go through the one CsvRecordEncoder into `head` (a
 * gzip stream or the destination's own stream), and SinkWriter's two phases run as one state
 * machine (open → preparing → prepared → publishing → published; failed; aborted).
 *
 * A subclass owns only where the bytes go and how they become visible: `finish` (phase 1: every
 * byte durable at the destination, the target untouched), `makeVisible` (phase 2: one atomic
 * step; it sets `state = 'published'` the moment readers see the new output, so a later
 * housekeeping failure is not reported as "not published"), `discardOutput` (abort: remove the
 * temporary artefacts) and `writeError` (a failure of the byte stream, as its own error type).
 */
export abstract class CsvStreamWriter implements SinkWriter {
  protected state: CsvWriterState = 'open';
  protected rows = 0;
  /** The byte stream's first error, seen by the pipeline; the next write or prepare reports it. */
  protected failure: unknown;
  private settling: Promise<unknown> | undefined;
  private aborting: Promise<void> | undefined;
  private readonly encoder: CsvRecordEncoder;

  protected constructor(
    columns: readonly Column[],
    /** Where records are written: the gzip stream, or the destination's stream itself. */
    protected readonly head: Writable,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.encoder = new CsvRecordEncoder(columns);
  }

  abstract get target(): string;

  /** Phase 1 of the destination (see the class comment). */
  protected abstract finish(): Promise<void>;
  /** Phase 2 of the destination (see the class comment). */
  protected abstract makeVisible(): Promise<SinkResult>;
  /** Removes the run's temporary artefacts; called once, only when nothing was published. */
  protected abstract discardOutput(): Promise<void>;
  /** A failure of the byte stream, named for its destination. */
  protected abstract writeError(cause: unknown): Error;

  /** Records the byte stream's completion: its first error becomes the writer's failure. */
  protected watch(done: Promise<void>): void {
    done.catch((error: unknown) => {
      this.failure ??= error;
    });
  }

  /** The header record, written by `open` once the destination is ready; a failure aborts the writer. */
  protected async writeHeader(columns: readonly Column[]): Promise<void> {
    try {
      await this.write(headerRecord(columns));
    } catch (error) {
      await this.abort();
      throw error;
    }
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    if (this.state !== 'open') throw new CsvWriterClosedError(this.target, 'writeRows', this.state);
    this.signal?.throwIfAborted();
    for (const chunk of encodedChunks(this.encoder, rows)) await this.write(chunk);
    this.rows += rows.length;
  }

  prepare(): Promise<void> {
    return this.step('open', 'preparing', 'prepared', () => this.finish());
  }

  publish(): Promise<SinkResult> {
    return this.step('prepared', 'publishing', 'published', () => this.makeVisible());
  }

  /** Idempotent; waits for a phase under way; after a successful publish there is nothing to undo. */
  abort(): Promise<void> {
    this.aborting ??= this.discard();
    return this.aborting;
  }

  /** Ends the byte stream and waits for the destination to hold every byte (phase 1's first step). */
  protected async endStream(completed: Promise<void>): Promise<void> {
    try {
      if (this.failure !== undefined) throw this.failure;
      this.head.end();
      await completed;
    } catch (error) {
      throw this.writeError(this.failure ?? error);
    }
  }

  private step<T>(from: CsvWriterState, during: CsvWriterState, to: CsvWriterState, work: () => Promise<T>): Promise<T> {
    if (this.state !== from) return Promise.reject(new CsvWriterClosedError(this.target, during, this.state));
    this.state = during;
    const running = work().then(
      (result) => {
        this.state = to;
        return result;
      },
      (error: unknown) => {
        if (this.state === during) this.state = 'failed';
        throw error;
      },
    );
    this.settling = running.catch(() => undefined);
    return running;
  }

  private async discard(): Promise<void> {
    await this.settling;
    if (this.state === 'published') return;
    this.state = 'aborted';
    this.head.destroy();
    await this.discardOutput();
  }

  /** Hands a chunk to the stream, waiting for it to drain when its buffer is full. */
  private async write(chunk: string): Promise<void> {
    if (this.failure !== undefined) throw this.writeError(this.failure);
    if (!this.head.write(chunk)) {
      try {
        await drained(this.head);
      } catch (error) {
        throw this.writeError(this.failure ?? error);
      }
    }
  }
}
