import { pino } from 'pino';
import type { RunHeld, Sink, SinkResult, SinkRunContext, SinkWriter } from '../../src/sinks/sink.js';
import type { TypedRow } from '../../src/transform/column.js';

export const silentLogger = pino({ level: 'silent' });

type Phase = 'writeRows' | 'prepare' | 'publish' | 'abort';

export interface FakeWriterOptions {
  /** Phases that throw this writer's `Error(\`${target} ${phase} failed\`)`. */
  failIn?: Phase[];
  /** Runs inside the phase before it settles (e.g. to abort a signal mid-publish). */
  during?: Partial<Record<Phase, () => void | Promise<void>>>;
  /** What the writer says when asked whether its target holds the run id (`heldRun`, logged); absent: it has no `heldRun`. */
  held?: { held: RunHeld['held']; rows?: number };
}

/** A writer that records every call (into a log shared by the writers of one test) and fails on request. */
export class FakeWriter implements SinkWriter {
  readonly rows: TypedRow[][] = [];

  constructor(
    readonly target: string,
    private readonly log: string[],
    private readonly options: FakeWriterOptions = {},
  ) {}

  private async step(phase: Phase): Promise<void> {
    this.log.push(`${phase} ${this.target}`);
    await this.options.during?.[phase]?.();
    if (this.options.failIn?.includes(phase)) throw new Error(`${this.target} ${phase} failed`);
  }

  async writeRows(rows: readonly TypedRow[]): Promise<void> {
    await this.step('writeRows');
    this.rows.push([...rows]);
  }
  prepare(): Promise<void> {
    return this.step('prepare');
  }
  async publish(): Promise<SinkResult> {
    await this.step('publish');
    return { sink: 'csv', target: this.target, rows: this.rows.flat().length };
  }
  abort(): Promise<void> {
    return this.step('abort');
  }
  get heldRun(): (() => Promise<RunHeld>) | undefined {
    const held = this.options.held;
    if (held === undefined) return undefined;
    return async () => {
      this.log.push(`heldRun ${this.target}`);
      return { sink: 'csv', target: this.target, readFrom: 'the test', ...held } as RunHeld;
    };
  }
}

/** A sink whose writers are FakeWriters; records the contexts it was opened with. */
export class FakeSink implements Sink {
  readonly kind = 'csv' as const;
  readonly opened: SinkRunContext[] = [];
  readonly writers: FakeWriter[] = [];

  constructor(
    readonly target: string,
    readonly publishRank: number,
    private readonly log: string[],
    private readonly options: FakeWriterOptions & { failOpen?: boolean } = {},
  ) {}

  async open(context: SinkRunContext): Promise<SinkWriter> {
    this.log.push(`open ${this.target}`);
    this.opened.push(context);
    if (this.options.failOpen) throw new Error(`${this.target} open failed`);
    const writer = new FakeWriter(this.target, this.log, this.options);
    this.writers.push(writer);
    return writer;
  }
  async sweep(): Promise<string[]> {
    return [];
  }
  async plan(): Promise<never> {
    throw new Error('not used');
  }
}
