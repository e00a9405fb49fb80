import type { Dispatcher } from 'undici';
import type { AttemptOutcome, RequestGate } from '../adaptive-concurrency.js';
import type { ExportQuery } from '../../config/job-schema.js';
import { excerpt, postJson, type RequestTimeouts } from '../http.js';
import { classifyAnswer, settle, type HttpOutcome } from '../http-answer.js';
import { parseExportPage, readExactPageWhen, regularErrorSchema, type ExportPage, type NumberTextColumns } from './export-response.js';
import type { RetryEvent } from '../../retry.js';
import { retryAfterCeiling, withSourceRetries, type RetryPolicy } from '../retry-policy.js';
import type { SessionToken } from '../session-token.js';
import { ExportApiError, ExportBodyCorruptError, ExportResponseError } from './export-errors.js';
import { ATTR, EVENTS, SPANS, telemetry } from '../../telemetry/telemetry.js';

export interface ExportClientOptions {
  baseUrl: string;
  tileParam: string;
  tileId: string;
  query: ExportQuery;
  itemsPerPage: number;
  jobName: string;
  dispatcher: Dispatcher;
  timeouts: RequestTimeouts;
  retry: RetryPolicy;
  token: SessionToken;
  signal?: AbortSignal;
  onRetry?: (event: RetryEvent & { pageNumber: number }) => void;
  onReauthenticate?: (pageNumber: number) => void;
  /**
   * The columns whose numbers keep their literal text (see numberTextColumns); without it every
   * page is scanned for inexact literals.
   */
  numberTextColumns?: NumberTextColumns;
}

export function exportUrl(baseUrl: string, tileParam: string, tileId: string): string {
  const url = new URL('api/v1/topics/incident/execute', baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`);
  url.searchParams.set(tileParam, tileId);
  return url.toString();
}

/** The reader stopped before it came to this page (see fetchPage's whenNeeded); nobody sees it. */
class PageNotNeeded extends Error {
  constructor(pageNumber: number) {
    super(`page ${pageNumber} was fetched ahead but is no longer needed`);
    this.name = 'PageNotNeeded';
  }
}

const PAGE_ROWS = ['result', 'rows'] as const;

type Attempt = { kind: 'page'; page: ExportPage } | { kind: 'unauthorized'; error: ExportApiError };

/** Runs the tile's export query for one page (spec, endpoint 7). Knows nothing of paging order or sinks. */
export class ExportClient {
  private readonly url: string;
  private readonly literalsMatter: ((value: unknown) => boolean) | undefined;

  constructor(private readonly options: ExportClientOptions) {
    this.url = exportUrl(options.baseUrl, options.tileParam, options.tileId);
    this.literalsMatter = options.numberTextColumns && readExactPageWhen(options.numberTextColumns);
  }

  /**
   * Each attempt waits for a permit from `gate` and reports its outcome to it (AIMD on 429).
   *
   * `whenNeeded`: a page fetched ahead of the consumer is read off the wire (releasing its
   * permit) but parsed only once this settles. Parsed early, its rows would wait in memory for
   * the sinks; a million-row run showed V8 moving such pages wholesale into the old generation
   * (a young page that is mostly live is promoted as a page), 188 MB of promotions at
   * concurrency 4 against 37 MB at concurrency 1, and that set the run's peak memory. If it
   * settles false, the reader stopped before this page: the answer is dropped unparsed.
   */
  async fetchPage(pageNumber: number, gate?: RequestGate, whenNeeded?: Promise<boolean>): Promise<ExportPage> {
    // The run's token first (fetched once, then cached), so that its span is the tile's child,
    // beside the pages, and not page 0's. Asked whether tracing is on or off: tracing must not
    // change what the client does.
    await this.options.token.get();
    return telemetry().inSpan(
      SPANS.page,
      { [ATTR.pageNumber]: pageNumber, [ATTR.httpMethod]: 'POST' },
      async (span) => {
        const page = await this.fetchPageUntraced(pageNumber, gate, whenNeeded);
        span.setAttributes({ [ATTR.pageRows]: page.rows.length });
        return page;
      },
      // A page fetched ahead that the reader no longer needs was abandoned, not failed.
      { isFailure: (error) => !(error instanceof PageNotNeeded) },
    );
  }

  private async fetchPageUntraced(pageNumber: number, gate?: RequestGate, whenNeeded?: Promise<boolean>): Promise<ExportPage> {
    let reauthenticated = false;
    for (;;) {
      const token = await this.options.token.get();
      const attempt = await withSourceRetries((attemptNumber) => this.attempt(pageNumber, token, attemptNumber, gate, whenNeeded), this.options.retry, {
        signal: this.options.signal,
        onRetry: (event) => {
          telemetry()
            .current()
            .addEvent(EVENTS.retry, { [ATTR.attempts]: event.attempt, 'tilehouse.delay_ms': event.delayMs, 'tilehouse.reason': event.reason });
          this.options.onRetry?.({ ...event, pageNumber });
        },
      });
      if (attempt.kind === 'page') return attempt.page;
      // One re-authentication per page: a token that expired mid-run is normal, a fresh token
      // that is refused again is not.
      if (reauthenticated) throw attempt.error;
      reauthenticated = true;
      telemetry().current().addEvent(EVENTS.reauthenticate);
      this.options.onReauthenticate?.(pageNumber);
      await this.options.token.refresh(token);
    }
  }

  private async attempt(pageNumber: number, token: string, attemptNumber: number, gate?: RequestGate, whenNeeded?: Promise<boolean>): Promise<Attempt> {
    const { jobName, query } = this.options;
    const permit = await gate?.acquire(this.options.signal);
    let outcome: HttpOutcome;
    let gateOutcome: AttemptOutcome = 'failed';
    try {
      const answer = await postJson({
        url: this.url,
        dispatcher: this.options.dispatcher,
        timeouts: this.options.timeouts,
        signal: this.options.signal,
        headers: { authorization: `Bearer ${token}` },
        body: { ...query, options: { ...query.options, pageNumber, itemsPerPage: this.options.itemsPerPage } },
      });
      outcome = { answer };
      const length = Number(answer.headers['content-length']);
      const span = telemetry().current();
      span.setAttributes({
        [ATTR.httpStatus]: answer.status,
        [ATTR.attempts]: attemptNumber,
        [ATTR.httpBodySize]: Number.isFinite(length) ? length : undefined,
      });
      if (answer.status === 429) span.addEvent(EVENTS.throttled, { [ATTR.attempts]: attemptNumber });
      gateOutcome = answer.status === 429 ? 'throttled' : answer.status >= 200 && answer.status < 300 ? 'succeeded' : 'failed';
    } catch (error) {
      // Export pages are read-only, so a request lost on the wire is safe to send again.
      outcome = { transportError: error };
    } finally {
      // The body is read: the request no longer occupies the source (parsing it does not).
      if (permit !== undefined) gate!.release(permit, gateOutcome);
    }
    if (whenNeeded !== undefined && gateOutcome === 'succeeded' && !(await whenNeeded)) throw new PageNotNeeded(pageNumber);

    const verdict = classifyAnswer(outcome, {
      jobName,
      what: `page ${pageNumber}`,
      retryAfterCeilingMs: retryAfterCeiling(this.options.retry),
      literalsMatter: this.literalsMatter,
      // A page is mostly its rows: parsed ~32 KB at a time, never one page-sized string.
      slicedArray: PAGE_ROWS,
      reauthOn401: true,
      // A 429 for an attempt sent while others of ours were in flight says "too many at once":
      // the gate has cut the limit, and the attempt goes back in line for a permit without
      // counting as a retry. (Paging at a concurrency above what the source allows would
      // otherwise spend the run's retry budget in proportion to the pages.) Alone on the wire,
      // a 429 is a plain throttle and counts; so the limit falling to 1 bounds how long this can go on.
      sharedWire: permit !== undefined && permit.inFlight > 1,
      bodyError: (answer, detail) =>
        answer.undecodable?.encoding === undefined
          ? new ExportResponseError(jobName, pageNumber, detail)
          : new ExportBodyCorruptError(jobName, pageNumber, answer.undecodable.encoding, detail, attemptNumber),
      statusError: (answer, body) => {
        const regular = regularErrorSchema.safeParse(body);
        const detail = regular.success ? regular.data.error.message : excerpt(answer.text) || '(empty body)';
        return { error: new ExportApiError(jobName, pageNumber, answer.status, detail, { id: this.options.tileId, param: this.options.tileParam }), detail };
      },
    });
    if (verdict.kind === 'reauth') return { kind: 'unauthorized', error: verdict.error as ExportApiError };
    settle(verdict);
    const parsed = parseExportPage(verdict.value, pageNumber);
    if (parsed.ok) return { kind: 'page', page: parsed.page };
    // The service said ok: false and why: quote it as the API's failure, not as a shape problem.
    if (parsed.serviceMessage !== undefined) throw new ExportApiError(jobName, pageNumber, verdict.status, parsed.serviceMessage);
    throw new ExportResponseError(jobName, pageNumber, parsed.problem);
  }
}
