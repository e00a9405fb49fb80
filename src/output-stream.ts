import { StringDecoder } from 'node:string_decoder';
import { Writable } from 'node:stream';
import { redactText } from './redaction.js';

/** A Node writable (process.stdout, a test capture) or any pino destination. */
interface Target {
  write(chunk: string): unknown;
  on?(event: 'error', listener: (error: Error) => void): unknown;
  isTTY?: boolean;
  columns?: number;
  destroyed?: boolean;
}

/**
 * Everything tilehouse writes to stdout, stderr and the log destination goes through one of
 * these (the CLI wraps them in `main`).
 *
 * - Every chunk passes the one redaction step (redaction.ts: registered secrets, credential shapes). Chunks are scrubbed
 *   one by one, never joined: every writer in tilehouse hands over whole messages (pino one line
 *   per write, the CLI one message per write), and joining would hold back a progress line
 *   (`\r…` without a newline) until the next write. A secret split across two writes is
 *   therefore not caught; nothing in tilehouse writes that way.
 * - A target that fails (EPIPE when the reader of a pipe went away, as with `| head`; EBADF) must
 *   neither hang the process nor change the outcome of the run (issue 9). Its 'error' is handled
 *   here, and every later write is dropped: output nobody reads is not worth a failed export.
 */
export class OutputStream extends Writable {
  #failed = false;
  readonly #decoder = new StringDecoder('utf8');

  constructor(private readonly target: Target) {
    super({ decodeStrings: false });
    target.on?.('error', () => {
      this.#failed = true;
    });
  }

  /** The target's: the logger and progress output decide on colours and `\r` lines from it. */
  get isTTY(): boolean {
    return this.target.isTTY === true;
  }

  /** The terminal's width, when the target is one: status lines are cut to it. */
  get columns(): number | undefined {
    return this.target.columns;
  }

  /** Whether the target failed and writes are dropped. */
  get dropping(): boolean {
    return this.#failed || this.target.destroyed === true;
  }

  override _write(chunk: string | Buffer, encoding: BufferEncoding | 'buffer', done: (error?: Error | null) => void): void {
    if (!this.dropping) {
      const text =
        typeof chunk === 'string' && (encoding === 'utf8' || encoding === 'utf-8')
          ? chunk
          : this.#decoder.write(typeof chunk === 'string' ? Buffer.from(chunk, encoding as BufferEncoding) : chunk);
      try {
        if (text !== '') this.target.write(redactText(text));
      } catch {
        this.#failed = true;
      }
    }
    done();
  }
}
