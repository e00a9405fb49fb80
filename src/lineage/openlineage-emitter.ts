import { setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from '../errors.js';
import type { Logger } from '../log.js';
import { redactJson, redactText } from '../redaction.js';
import { type AbandonedTileRun, type Lineage, lineageStartSent, type LineageTileEnd, type LineageTileRun, type LineageTileStart } from './lineage.js';
import type { LineageTransport } from './lineage-transport.js';
import { TileRunEvents, type EventContext } from './run-events.js';
import { newUuidV7 } from './run-uuid.js';

// `scheme://user:password@`: a transport's error (undici's, a proxy's answer) may quote a URL with
// its credentials, which no setting of tilehouse holds but a redirect or a proxy can bring.
const USER_INFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi;

/** What a warning or a debug line may say of a transport's failure: secrets and a URL's user info taken out. */
function printable(text: string): string {
  return redactText(text).replace(USER_INFO, '$1[redacted]@');
}

/**
 * Lineage on: each tile run's events are built here and sent through one transport, one at a time
 * in the order they happened (START before its terminal event), in the background, so a slow
 * consumer never slows a tile. A consumer that refuses, fails or hangs costs one warning (the
 * first failure; later ones go to the debug log) and, at the exit, at most the transport's timeout:
 * what is still unsent then is dropped. Nothing here changes a run's outcome or its files.
 */
export class OpenLineageEmitter implements Lineage {
  readonly enabled = true;
  private chain: Promise<void> = Promise.resolve();
  private readonly stop = new AbortController();
  private warned = false;
  private sent = 0;
  private failed = 0;

  constructor(
    private readonly transport: LineageTransport,
    private readonly context: EventContext,
    private readonly logger: Logger,
    private readonly now: () => Date = () => new Date(),
  ) {}

  startTile(start: LineageTileStart): LineageTileRun {
    let events: TileRunEvents;
    try {
      const at = this.now();
      events = new TileRunEvents(start, this.context, newUuidV7(at.getTime()));
      const ref = { namespace: this.context.namespace, job: start.job, runId: events.runId };
      this.enqueue(events.started(at), () => lineageStartSent({ job: start.job, runId: start.runId, ref }));
    } catch (error) {
      this.warnOnce(`lineage: no events for job ${start.job}: ${messageOf(error)}`);
      return { end: () => undefined };
    }
    let ended = false;
    return {
      ref: { namespace: this.context.namespace, job: start.job, runId: events.runId },
      end: (result: LineageTileEnd, stopped: boolean) => {
        if (ended) return;
        ended = true;
        try {
          this.enqueue(events.ended(this.now(), result, stopped));
        } catch (error) {
          this.warnOnce(`lineage: no terminal event for job ${start.job}: ${messageOf(error)}`);
        }
      },
    };
  }

  async closeAbandoned(run: AbandonedTileRun): Promise<boolean> {
    let event: Record<string, unknown>;
    try {
      // The killed try's own job and run: never this run's parent or nominal time, which are not its.
      const context = { ...this.context, parent: undefined, nominal: undefined };
      const start = { job: run.job, tile: run.tile, runId: run.runId, sourceUrl: run.sourceUrl, startedAt: this.now(), timezone: 'UTC' };
      event = new TileRunEvents(start, context, run.lineageRunId).abandoned(this.now(), run);
    } catch (error) {
      this.warnOnce(`lineage: the open run ${run.lineageRunId} of job ${run.job} was not closed: ${messageOf(error)}`);
      return false;
    }
    let accepted = false;
    this.enqueue(event, () => (accepted = true));
    await this.chain;
    return accepted;
  }

  /** `onSent`: after the transport accepted the event. */
  private enqueue(event: Record<string, unknown>, onSent?: () => void): void {
    this.chain = this.chain.then(() => this.deliver(event, onSent));
  }

  private async deliver(event: Record<string, unknown>, onSent?: () => void): Promise<void> {
    if (this.stop.signal.aborted) {
      this.failed += 1;
      return;
    }
    const signal = AbortSignal.any([this.stop.signal, AbortSignal.timeout(this.transport.timeoutMs)]);
    try {
      // Every transport is handed the event redacted (src/redaction.ts): its error message, its facets' texts.
      await this.transport.send(redactJson(event), signal);
      this.sent += 1;
      onSent?.();
    } catch (error) {
      this.failed += 1;
      const reason = signal.aborted ? `no answer within ${this.transport.timeoutMs / 1000} s` : messageOf(error);
      this.warnOnce(
        `lineage: an event could not be sent to ${this.transport.describe} (${reason}); the run goes on without it, later failures are logged at debug level`,
      );
      this.logger.debug({ eventType: event.eventType, reason: printable(reason) }, 'lineage event not sent');
    }
  }

  private warnOnce(message: string): void {
    if (this.warned) {
      this.logger.debug(printable(message));
      return;
    }
    this.warned = true;
    this.logger.warn(printable(message));
  }

  /** Waits for the events in flight at most the transport's timeout, then drops the rest. */
  async shutdown(): Promise<void> {
    const bound = new AbortController();
    const drained = await Promise.race([this.chain.then(() => true), sleep(this.transport.timeoutMs, false, { signal: bound.signal }).catch(() => false)]);
    bound.abort();
    if (!drained) {
      this.stop.abort(new Error('lineage shut down'));
      this.warnOnce(`lineage: events to ${this.transport.describe} still unsent after ${this.transport.timeoutMs / 1000} s were dropped at exit`);
      await this.chain;
    }
    await this.transport.close().catch(() => undefined);
    this.logger.debug({ sent: this.sent, failed: this.failed }, 'lineage events');
  }
}
