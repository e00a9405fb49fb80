import type { IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { DecoratorHandler } from './undici-parts.js';

/**
 * One request and its answer as they crossed the dispatcher: what `tilehouse probe` records.
 * Request headers are not kept at all (the bearer token travels there).
 */
export interface WireExchange {
  method: string;
  /** Path and query string as sent. */
  path: string;
  /** The request body as sent (a JSON text), if it was a string. */
  requestBody: string | undefined;
  /** null: no answer (the connection failed before headers). */
  status: number | null;
  statusText: string | undefined;
  headers: IncomingHttpHeaders;
  /** The body decompressed and parsed; undefined when it is not JSON (or did not arrive whole). */
  body: unknown;
  startedAt: number;
  elapsedMs: number;
}

// undici's types declare DecoratorHandler without the methods it has (it forwards every callback
// of the handler it wraps); this names the ones the recorder extends.
interface ForwardingHandler extends Dispatcher.DispatchHandler {
  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void;
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void;
  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void;
  onResponseError(controller: Dispatcher.DispatchController, error: Error): void;
}
const Forwarding = DecoratorHandler as unknown as new (handler: Dispatcher.DispatchHandler) => ForwardingHandler;

function decodedBody(chunks: Buffer[], encoding: string | string[] | undefined): unknown {
  let bytes = Buffer.concat(chunks);
  const codings = (Array.isArray(encoding) ? encoding.join(',') : (encoding ?? ''))
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  try {
    for (const coding of codings.reverse()) {
      if (coding === 'gzip' || coding === 'x-gzip') bytes = gunzipSync(bytes);
      else if (coding === 'br') bytes = brotliDecompressSync(bytes);
      else if (coding === 'deflate') bytes = inflateSync(bytes);
      else return undefined;
    }
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

class Recorder extends Forwarding {
  private readonly chunks: Buffer[] = [];

  constructor(
    handler: Dispatcher.DispatchHandler,
    private readonly exchange: WireExchange,
    private readonly done: (exchange: WireExchange) => void,
  ) {
    super(handler);
  }

  override onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    this.exchange.status = statusCode;
    this.exchange.statusText = statusMessage;
    this.exchange.headers = headers;
    super.onResponseStart(controller, statusCode, headers, statusMessage);
  }

  override onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
    super.onResponseData(controller, chunk);
  }

  override onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.exchange.body = decodedBody(this.chunks, this.exchange.headers['content-encoding']);
    this.finish();
    super.onResponseEnd(controller, trailers);
  }

  override onResponseError(controller: Dispatcher.DispatchController, error: Error): void {
    this.finish();
    super.onResponseError(controller, error);
  }

  private finish(): void {
    this.exchange.elapsedMs = Date.now() - this.exchange.startedAt;
    this.done(this.exchange);
  }
}

/**
 * `dispatcher` (the same connection pool, the same HTTP path as a run) with every exchange handed
 * to `onExchange` once its answer is complete or failed. For a probe of a few pages: bodies are
 * kept whole in memory.
 */
export function recordingDispatcher(dispatcher: Dispatcher, onExchange: (exchange: WireExchange) => void): Dispatcher {
  return dispatcher.compose((dispatch) => (options, handler) => {
    const exchange: WireExchange = {
      method: options.method,
      path: options.path,
      requestBody: typeof options.body === 'string' ? options.body : undefined,
      status: null,
      statusText: undefined,
      headers: {},
      body: undefined,
      startedAt: Date.now(),
      elapsedMs: 0,
    };
    return dispatch(options, new Recorder(handler, exchange, onExchange));
  });
}
