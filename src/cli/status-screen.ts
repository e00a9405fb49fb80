/** Where the screen writes: stderr (through an OutputStream), or a capture in tests. */
export interface ScreenTarget {
  write(chunk: string): unknown;
  columns?: number;
}

/** At most this often the status lines are redrawn: ~10 times a second is live enough. */
export const REDRAW_INTERVAL_MS = 100;

const CLEAR_LINE = '\r\x1b[K';
const UP_AND_CLEAR = '\x1b[1A\x1b[K';

/**
 * A terminal's stderr during a run: lines that stay (log events, notices) scroll up as usual,
 * and below them a few status lines (one per running tile) are redrawn in place with `\r\x1b[K`,
 * throttled to REDRAW_INTERVAL_MS. Every permanent line first erases the status lines and then
 * redraws them, so the two never mix. Status lines are cut to the terminal's width: a wrapped
 * line would break the cursor arithmetic that erases them.
 *
 * Off a terminal there is no screen: the CLI writes JSON lines and nothing is redrawn.
 */
export class StatusScreen {
  readonly #status = new Map<string, string>();
  #drawn = 0;
  #lastDraw = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly target: ScreenTarget,
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes text that stays (whole lines), keeping the status lines below it. */
  write(text: string): void {
    if (this.#drawn === 0 || this.#closed) {
      this.target.write(text);
      return;
    }
    this.target.write(`${this.#erase()}${text}${this.#render()}`);
    this.#lastDraw = this.now();
    // What a pending redraw would show has just been drawn.
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Sets (or replaces) one status line; the screen shows it at the next redraw. */
  set(key: string, line: string): void {
    if (this.#closed) return;
    this.#status.set(key, line);
    this.#schedule();
  }

  delete(key: string): void {
    if (!this.#status.delete(key) || this.#closed) return;
    this.#schedule();
  }

  /** Erases the status lines for good (before the summary); later `set`s are ignored. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#drawn > 0) this.target.write(this.#erase());
    this.#drawn = 0;
    this.#closed = true;
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    const wait = this.#lastDraw + REDRAW_INTERVAL_MS - this.now();
    if (wait <= 0) {
      this.#draw();
      return;
    }
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#draw();
    }, wait);
    this.#timer.unref();
  }

  #draw(): void {
    if (this.#closed) return;
    this.target.write(`${this.#erase()}${this.#render()}`);
    this.#lastDraw = this.now();
  }

  /** Moves to the first status line, erasing each on the way; leaves the cursor at column 0. */
  #erase(): string {
    const text = this.#drawn === 0 ? '' : CLEAR_LINE + UP_AND_CLEAR.repeat(this.#drawn - 1);
    this.#drawn = 0;
    return text;
  }

  #render(): string {
    // A pseudo-terminal nobody sized reports 0 columns: assume the classic 80.
    const width = Math.max(20, (this.target.columns || 80) - 1);
    const lines = [...this.#status.values()].map((line) => (line.length > width ? `${line.slice(0, width - 1)}…` : line));
    this.#drawn = lines.length;
    return lines.join('\n');
  }
}
