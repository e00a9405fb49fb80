/**
 * Additive-increase / multiplicative-decrease limit for parallel page requests. A 429 halves the
 * limit (the source told us it is overloaded); each success adds 1/limit, so the limit grows by
 * about one per round of successful requests, never above the configured maximum.
 *
 * Requests already in flight when the limit was cut were sent under the old limit; their 429s
 * say nothing new, so only a throttle of a request started since the last cut cuts again
 * (as TCP reduces its window once per round trip, not once per lost packet).
 */
export class AdaptiveConcurrency {
  private current: number;
  private lowest: number;
  private epoch = 0;

  constructor(readonly maximum: number) {
    if (!Number.isInteger(maximum) || maximum < 1) throw new RangeError(`concurrency must be a positive integer, got ${maximum}`);
    this.current = maximum;
    this.lowest = maximum;
  }

  /** Requests allowed in flight now. */
  get limit(): number {
    return Math.max(1, Math.floor(this.current));
  }

  /** The smallest limit reached so far (for the run summary). */
  get minimum(): number {
    return Math.max(1, Math.floor(this.lowest));
  }

  /** Call when a request starts; pass the result to `onThrottled`. */
  begin(): number {
    return this.epoch;
  }

  onThrottled(startedInEpoch: number): void {
    if (startedInEpoch !== this.epoch) return;
    this.epoch += 1;
    this.current = Math.max(1, this.current / 2);
    this.lowest = Math.min(this.lowest, this.current);
  }

  onSuccess(): void {
    this.current = Math.min(this.maximum, this.current + 1 / this.limit);
  }
}
