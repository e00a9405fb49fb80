import { Writable } from 'node:stream';
import { CRC32C } from '@google-cloud/storage';
import { GcsError } from './gcs-errors.js';
import { GcsHttpError, redacted, type GcsAnswer, type GcsHttp } from './gcs-http.js';

/**
 * Cloud Storage requires every chunk but the last to be a multiple of 256 KiB. A chunk stays in
 * memory until the service says it persisted it, so it is the most this writer keeps for resending,
 * and memory is this buffer plus the stream's small internal one, whatever the object's size.
 * 2 MiB, not Google's 8 MiB throughput advice: measured with the bench's gs:// scenario (1M rows),
 * peak RSS grows by about three times the chunk size (8 MiB: 1.31x local CSV; 2 MiB: 1.21x, the
 * same as the client's unchunked stream), and 2 MiB per round trip still outruns what tilehouse
 * produces (CSV at ~20 MB/s at most; one request per 2 MiB at 50 ms a round trip carries ~40 MB/s).
 */
export const CHUNK_GRANULE = 256 * 1024;
export const DEFAULT_CHUNK_BYTES = 8 * CHUNK_GRANULE; // 2 MiB

/** What the service says the finished object is. */
export interface UploadedObject {
  name: string;
  bucket: string;
  generation: string;
  size: number;
  crc32c: string;
  metadata: Record<string, string>;
}

export interface ResumableUploadOptions {
  http: GcsHttp;
  bucket: string;
  object: string;
  contentType: string;
  metadata: Record<string, string>;
  /** The upload's precondition: 0 = only if no such object exists. */
  ifGenerationMatch: number;
  chunkBytes?: number;
}

/** Thrown by an attempt that must go again after a fresh session (the old one is gone). */
class SessionRestart extends GcsHttpError {}

/**
 * A resumable upload as a Writable, driven by tilehouse (see gcs-http.ts for why not the client's
 * stream). Bytes fill one chunk buffer; a full buffer is sent with `Content-Range: bytes a-b/*`.
 * After any failure that may have reached the service (a 5xx, 408, 429, a reset, a timeout), the
 * next attempt first asks the session what it persisted (`Content-Range: bytes *\/*`) and resends
 * only the rest: from the buffer, which still holds every byte the service has not confirmed.
 * A service may persist part of a chunk (308 with a shorter Range); the rest stays in the buffer and
 * goes with the next one. A session the service no longer knows (404/410) is started again when
 * the buffer still holds the object from its first byte; otherwise the streamed bytes cannot be
 * produced again and the upload fails naming the object and how much had been persisted.
 *
 * `finished` holds the service's metadata of the stored object once the stream has ended; its
 * size and CRC32C are checked against the bytes written here.
 */
export class ResumableUpload extends Writable {
  finished: UploadedObject | undefined;
  private session: string | undefined;
  /** Offset in the object of `buffer[0]`: every byte before it is persisted. */
  private base = 0;
  private filled = 0;
  private readonly buffer: Buffer;
  /** The last request's outcome is unknown: ask the session before sending again. */
  private unsure = false;
  private readonly crc = new CRC32C();
  /** Aborts the request in flight when the stream is destroyed (the run failed or stopped). */
  private readonly stopped = new AbortController();
  private written = 0;
  /** Sessions started (a restart after 404/410 starts another). */
  sessions = 0;
  /**
   * Whether the object may exist: a resumable upload creates it only with its final request, so
   * before one was sent there is nothing to delete; after, there may be, answered or not.
   */
  mayHaveCreated = false;

  constructor(private readonly options: ResumableUploadOptions) {
    super({ highWaterMark: 64 * 1024 });
    const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    if (chunkBytes <= 0 || chunkBytes % CHUNK_GRANULE !== 0) throw new Error(`chunkBytes ${chunkBytes} is not a positive multiple of ${CHUNK_GRANULE}`);
    this.buffer = Buffer.allocUnsafe(chunkBytes);
  }

  private get name(): string {
    return `gs://${this.options.bucket}/${this.options.object}`;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.append(chunk).then(() => callback(), callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.flush(true).then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stopped.abort(error ?? new Error('upload stream destroyed'));
    callback(error);
  }

  private async append(chunk: Buffer): Promise<void> {
    this.crc.update(chunk);
    this.written += chunk.length;
    let from = 0;
    while (from < chunk.length) {
      const taken = chunk.copy(this.buffer, this.filled, from);
      this.filled += taken;
      from += taken;
      if (this.filled === this.buffer.length) await this.flush(false);
    }
  }

  /** Sends the buffer (all of it when `last`, else whole 256 KiB granules) until the service holds it. */
  private flush(last: boolean): Promise<void> {
    return this.options.http.retrying(last ? 'finishing the upload' : 'uploading a chunk', async () => {
      for (;;) {
        this.session ??= await this.start();
        if (this.unsure && (await this.askPersisted())) return this.done();
        if (!last && this.filled < this.buffer.length) return;
        const before = this.base;
        const answer = await this.put(last);
        if (answer.status === 200 || answer.status === 201) return this.done(answer);
        // A 308 that persisted nothing (legal: no Range) is a failed try, so a service that never
        // moves spends the retry budget instead of looping.
        if (this.base === before)
          throw new GcsHttpError(`the upload session of ${this.name} persisted nothing of the bytes from offset ${this.base}`, 308, true);
        // Partly persisted: the rest stays in the buffer, topped up by the next bytes (or sent now if last).
        if (!last) return;
      }
    });
  }

  private async start(): Promise<string> {
    const { http, bucket, object, contentType, metadata, ifGenerationMatch } = this.options;
    const url = `${http.uploadBase}/b/${encodeURIComponent(bucket)}/o?uploadType=resumable&name=${encodeURIComponent(object)}&ifGenerationMatch=${ifGenerationMatch}`;
    // A lost answer leaves an unused session behind: it holds no object and expires on its own.
    const answer = await http.send('POST', url, {
      headers: { 'content-type': 'application/json; charset=UTF-8', 'x-upload-content-type': contentType },
      body: JSON.stringify({ name: object, contentType, metadata }),
      signal: this.stopped.signal,
    });
    const location = answer.headers.get('location');
    if (answer.status !== 200 || location === null) {
      if (answer.status === 200) throw new GcsHttpError(`POST ${url}: the session start answered without a Location`, 200, true);
      throw http.failure('POST', url, answer);
    }
    this.sessions += 1;
    return location;
  }

  /** Asks the session what it holds; true when the object is already complete. */
  private async askPersisted(): Promise<boolean> {
    const answer = await this.sendToSession({ 'content-range': 'bytes */*' });
    this.unsure = false;
    if (answer.status === 200 || answer.status === 201) {
      this.finished = parseObject(answer.text);
      return true;
    }
    this.settle(answer);
    return false;
  }

  private async put(last: boolean): Promise<GcsAnswer> {
    const sending = last ? this.filled : this.filled - (this.filled % CHUNK_GRANULE);
    const end = this.base + sending;
    const total = last ? String(end) : '*';
    const range = sending === 0 ? `bytes */${total}` : `bytes ${this.base}-${end - 1}/${total}`;
    this.unsure = true;
    if (last) this.mayHaveCreated = true;
    const answer = await this.sendToSession({ 'content-range': range }, this.buffer.subarray(0, sending));
    this.unsure = false;
    if (answer.status === 200 || answer.status === 201) {
      this.finished = parseObject(answer.text);
      return answer;
    }
    this.settle(answer);
    return answer;
  }

  /** One request to the session; a 404/410 (session gone) restarts it when the bytes are all here. */
  private async sendToSession(headers: Record<string, string>, body?: Buffer): Promise<GcsAnswer> {
    const session = this.session!;
    const answer = await this.options.http.send('PUT', session, { headers, signal: this.stopped.signal, ...(body === undefined ? {} : { body }) });
    if (answer.status === 404 || answer.status === 410) {
      this.session = undefined;
      if (this.base === 0) {
        this.unsure = false;
        throw new SessionRestart(`the upload session of ${this.name} is gone (${answer.status}); starting it again`, answer.status, true);
      }
      throw new GcsError(
        'write_failed',
        this.name,
        `the upload session ${redacted(session)} of ${this.name} is gone (${answer.status}) after ${this.base} bytes were persisted; those bytes were streamed and cannot be produced again, so the run must start over`,
      );
    }
    if (answer.status === 308 || answer.status === 200 || answer.status === 201) return answer;
    throw this.options.http.failure('PUT', session, answer);
  }

  /** Drops from the buffer what the service's `Range: bytes=0-N` says it persisted (none without it). */
  private settle(answer: GcsAnswer): void {
    const range = answer.headers.get('range');
    const match = range === null ? null : /^bytes=0-(\d+)$/.exec(range.trim());
    if (range !== null && match === null) throw new GcsHttpError(`the upload session of ${this.name} answered an unreadable Range: ${range}`, 308, true);
    const persisted = match === null ? 0 : Number(match[1]) + 1;
    if (persisted < this.base || persisted > this.base + this.filled) {
      throw new GcsError(
        'write_failed',
        this.name,
        `the upload session says it holds ${persisted} bytes, but ${this.base} were confirmed and ${this.base + this.filled} sent; the upload cannot be resumed`,
      );
    }
    const dropped = persisted - this.base;
    this.buffer.copy(this.buffer, 0, dropped, this.filled);
    this.filled -= dropped;
    this.base = persisted;
  }

  private done(answer?: GcsAnswer): void {
    if (answer !== undefined) this.finished = parseObject(answer.text);
    const object = this.finished!;
    const crc32c = this.crc.toString();
    if (object.size !== this.written || object.crc32c !== crc32c) {
      throw new GcsError(
        'write_failed',
        this.name,
        `the stored object does not match the bytes sent (size ${object.size} vs ${this.written}, crc32c ${object.crc32c} vs ${crc32c})`,
      );
    }
    this.filled = 0;
    this.base = this.written;
  }
}

function parseObject(text: string): UploadedObject {
  const body = JSON.parse(text) as {
    name: string;
    bucket: string;
    generation: string | number;
    size: string | number;
    crc32c?: string;
    metadata?: Record<string, string>;
  };
  return {
    name: body.name,
    bucket: body.bucket,
    generation: String(body.generation),
    size: Number(body.size),
    crc32c: body.crc32c ?? '',
    metadata: body.metadata ?? {},
  };
}
