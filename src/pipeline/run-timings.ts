import type { SinkWriter } from '../sinks/sink.js';

/**
 * Where one tile run's time went, measured at the seams it already has: `source` is the time the
 * reader waited for the next page (the token and the page requests, as far as they were not done
 * ahead of it), `reading` the rest of the read (decoding, typing, writing to every sink), and
 * `prepare:<sink>` / `publish:<sink>` each sink's two phases (its kind; `#2` for a second of a
 * kind). Summed over a re-read on drift. The run summary, the run history and `status` carry it.
 */
export class RunTimings {
  private readonly spent = new Map<string, number>();

  add(name: string, ms: number): void {
    this.spent.set(name, (this.spent.get(name) ?? 0) + ms);
  }

  /** The pages as they come, the wait for each counted as the source's. */
  async *waitingOnSource<T>(pages: AsyncIterable<T>): AsyncGenerator<T> {
    const iterator = pages[Symbol.asyncIterator]();
    try {
      for (;;) {
        const asked = performance.now();
        let next: IteratorResult<T>;
        try {
          next = await iterator.next();
        } finally {
          // A page that failed was waited for too.
          this.add('source', performance.now() - asked);
        }
        if (next.done === true) return;
        yield next.value;
      }
    } finally {
      await iterator.return?.();
    }
  }

  /** A read of every page into every sink: its time less the source's waits during it is reading. */
  async reading<R>(read: () => Promise<R>): Promise<R> {
    const began = performance.now();
    const sourceBefore = this.spent.get('source') ?? 0;
    try {
      return await read();
    } finally {
      const waited = (this.spent.get('source') ?? 0) - sourceBefore;
      this.add('reading', Math.max(0, performance.now() - began - waited));
    }
  }

  /** The writers, each phase timed under its sink's name (`kinds[i]` is writer i's kind). */
  timedWriters(writers: readonly SinkWriter[], kinds: readonly string[]): SinkWriter[] {
    const seen = new Map<string, number>();
    return writers.map((writer, index) => {
      const kind = kinds[index] ?? 'sink';
      const count = (seen.get(kind) ?? 0) + 1;
      seen.set(kind, count);
      const name = count === 1 ? kind : `${kind}#${count}`;
      const timed = async <R>(phase: string, call: () => Promise<R>): Promise<R> => {
        const began = performance.now();
        try {
          return await call();
        } finally {
          this.add(`${phase}:${name}`, performance.now() - began);
        }
      };
      return new Proxy(writer, {
        get: (target, property) => {
          if (property === 'prepare') return () => timed('prepare', () => target.prepare());
          if (property === 'publish') return () => timed('publish', () => target.publish());
          const value: unknown = Reflect.get(target, property, target);
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
        },
      });
    });
  }

  /** Milliseconds by name, whole. */
  toRecord(): Record<string, number> {
    return Object.fromEntries([...this.spent].map(([name, ms]) => [name, Math.round(ms)]));
  }
}
