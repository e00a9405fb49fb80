/**
 * Items handed from a sink's `writeRows` (the producer) to what consumes them as a run reads (a
 * data file being written: its bytes; the partition and merge modes' files: the row batches): a
 * push resolves once the consumer took every item, so at most one batch is held in memory; `fail`
 * ends the consumer's iteration with an error (writeNewFile then removes its file).
 */
export class HandoffChannel<T> implements AsyncIterable<T> {
  private queue: T[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  private drained: (() => void) | undefined;

  push(pieces: readonly T[]): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (pieces.length === 0) return Promise.resolve();
    this.queue.push(...pieces);
    const taken = new Promise<void>((resolve) => {
      this.drained = resolve;
    });
    this.signal();
    return taken;
  }

  end(): void {
    this.ended = true;
    this.signal();
  }

  fail(error: Error): void {
    this.failure ??= error;
    this.signal();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.failure) throw this.failure;
      const piece = this.queue.shift();
      if (piece !== undefined) {
        yield piece;
        continue;
      }
      const drained = this.drained;
      this.drained = undefined;
      drained?.();
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }
}
