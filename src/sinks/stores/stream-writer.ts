import type { Writable } from 'node:stream';
import type { TypedRow } from '../../transform/column.js';
import type { SinkResult, SinkWriter } from '../sink.js';
import { drained } from './drained.js';
import { FileWriterClosedError } from './store-errors.js';
import type { FileChunk, FileEncoder, FormatNames } from './file-bytes.js';

export type FileWriterState = 'open' | 'preparing' | 'prepared' | 'publishing' | 'published' | 'failed' | 'aborted';

/**
 * What the local file writer and the Cloud Storage object writer share, so that their bytes and
 * their phases cannot drift apart: typed rows go through the run's one FileEncoder (the format's)
 * into `head` (the format's wrapper, e.g. gzip, or the destination's own stream), and SinkWriter's two phases run as one state
 * machine (open → preparing → prepared → publishing → published; failed; aborted).
 *
 * A subclass owns only where the bytes go and how they become visible: `finish` (phase 1: every
 * byte durable at the destination, the target untouched), `makeVisible` (phase 2: one atomic
 * step; it sets `state = 'published'` the moment readers see the new output, so a later
 * housekeeping failure is not reported as "not published"), `discardOutput` (abort: remove the
 * temporary artefacts) and `writeError` (a failure of the byte stream, as its own error type).
 */
export abstract class FileStreamWriter implements SinkWriter {
  protected state: FileWriterState = 'open';
  protected rows = 0;
  /** The byte stream's first error, seen by the pipeline; the next write or prepare reports it. */
  protected failure: unknown;
  private settling: Promise<unknown> | undefined;
  private aborting: Promise<void> | undefined;

  protected constructor(
    protected readonly format: FormatNames,
    private readonly encoder: FileEncoder,
    /** Where encoded bytes are written: the format's wrapper (gzip), or the destination's stream itself. */
    protected readonly head: Writable,
    private readonly signal: AbortSignal | undefined,
  ) {}

  abstract get target(): string;
  /** The job whose run this is, for messages. */
  protected abstract get jobName(): string;

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

  /** The encoder's first bytes (CSV: the header record), written by `open` once the destination is ready; a failure aborts the writer. */
  protected async writeStart(): Promise<void> {
    try {
      await this.writeAll(this.encoder.start());
    } catch (error) {
      await this.abort();
      throw error;
    }
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    if (this.state !== 'open') throw new FileWriterClosedError(this.format, this.jobName, this.target, 'writeRows', this.state);
    this.signal?.throwIfAborted();
    await this.writeAll(this.encoder.encode(rows));
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

  /** Writes the encoder's last bytes, ends the byte stream and waits for the destination to hold every byte (phase 1's first step). */
  protected async endStream(completed: Promise<void>): Promise<void> {
    await this.writeAll(this.encoder.end());
    try {
      if (this.failure !== undefined) throw this.failure;
      this.head.end();
      await completed;
    } catch (error) {
      throw this.writeError(this.failure ?? error);
    }
  }

  private step<T>(from: FileWriterState, during: FileWriterState, to: FileWriterState, work: () => Promise<T>): Promise<T> {
    if (this.state !== from) return Promise.reject(new FileWriterClosedError(this.format, this.jobName, this.target, during, this.state));
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

  private async writeAll(chunks: Iterable<FileChunk>): Promise<void> {
    for (const chunk of chunks) await this.write(chunk);
  }

  /** Hands a chunk to the stream, waiting for it to drain when its buffer is full. */
  private async write(chunk: FileChunk): Promise<void> {
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
