/** What one request attempt holds while it is on the wire: granted by `acquire`, handed back to `release`. */
export interface Permit {
  /** The limit's epoch when the attempt was sent (see `onThrottled`). */
  readonly epoch: number;
  /** Attempts in flight when this one was sent, itself included. */
  readonly inFlight: number;
}

export type AttemptOutcome = 'succeeded' | 'throttled' | 'failed';

/** Admission of request attempts: every attempt, retries included, waits for a permit. */
export interface RequestGate {
  acquire(signal?: AbortSignal): Promise<Permit>;
  release(permit: Permit, outcome: AttemptOutcome): void;
}

/**
 * Additive-increase / multiplicative-decrease limit for parallel page requests. A 429 halves the
 * limit (the source told us it is overloaded); each success adds 1/limit, so the limit grows by
 * about one per round of successful requests, never above the configured maximum.
 *
 * Requests already in flight when the limit was cut were sent under the old limit; their 429s
 * say nothing new, so only a throttle of a request started since the last cut cuts again
 * (as TCP reduces its window once per round trip, not once per lost packet).
 *
 * It is also the gate every attempt passes: no more attempts are on the wire than the limit
 * allows, retries included. Without that, the requests turned away when the limit was cut would
 * be re-sent at once (a concurrency 429 usually says Retry-After: 0) while just as many others
 * were still in flight, be turned away again, and exhaust their attempts.
 */
export class AdaptiveConcurrency implements RequestGate {
  private current: number;
  private epoch = 0;
  private active = 0;
  private readonly waiting: Array<(permit: Permit) => void> = [];

  constructor(readonly maximum: number) {
    if (!Number.isInteger(maximum) || maximum < 1) throw new RangeError(`concurrency must be a positive integer, got ${maximum}`);
    this.current = maximum;
  }

  /** Requests allowed in flight now. */
  get limit(): number {
    return Math.max(1, Math.floor(this.current));
  }

  /** Resolves once fewer attempts than the limit are in flight (first come, first served). */
  acquire(signal?: AbortSignal): Promise<Permit> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.waiting.length === 0 && this.active < this.limit) return Promise.resolve(this.grant());
    return new Promise<Permit>((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiting.indexOf(admit);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal!.reason);
      };
      const admit = (permit: Permit) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(permit);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(admit);
    });
  }

  /** Ends an attempt: its outcome moves the limit, and its slot goes to the next waiting attempt. */
  release(permit: Permit, outcome: AttemptOutcome): void {
    this.active -= 1;
    if (outcome === 'succeeded') this.onSuccess();
    else if (outcome === 'throttled') this.onThrottled(permit.epoch);
    while (this.waiting.length > 0 && this.active < this.limit) this.waiting.shift()!(this.grant());
  }

  private onThrottled(startedInEpoch: number): void {
    if (startedInEpoch !== this.epoch) return;
    this.epoch += 1;
    this.current = Math.max(1, this.current / 2);
  }

  private onSuccess(): void {
    this.current = Math.min(this.maximum, this.current + 1 / this.limit);
  }

  private grant(): Permit {
    this.active += 1;
    return { epoch: this.epoch, inFlight: this.active };
  }
}
