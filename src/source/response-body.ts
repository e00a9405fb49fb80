/** A response body from wire bytes to text or JSON (decompressed, strict UTF-8), apart from http.ts, which makes the request. */

import { isUtf8 } from 'node:buffer';
import { PassThrough, type Readable, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { TextDecoder } from 'node:util';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { parseJsonBody, parseJsonBytes, type JsonBodyParse, type JsonBytesOptions } from './json-body.js';

/** Why a body could not be turned into text; no raw bytes, so it is safe to put in a message. */
export interface BodyProblem {
  detail: string;
  /** A retry may get it whole (a stream cut short or corrupted), as opposed to a body that is wrong as sent. */
  transient: boolean;
  /** The content-encoding whose stream could not be decoded, when that was the problem. */
  encoding?: string;
}

/** `content-encoding` as a list of codings in the order they were applied; identity dropped. */
function contentCodings(header: string | string[] | undefined): string[] {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
}

function decompressorFor(coding: string): Transform | undefined {
  if (coding === 'gzip' || coding === 'x-gzip') return createGunzip();
  if (coding === 'br') return createBrotliDecompress();
  if (coding === 'deflate') return createInflate();
  return undefined;
}

/** A body read off the wire: its text on demand, and why it cannot be decoded, if so. */
interface ReadBody {
  text: () => string;
  undecodable?: BodyProblem;
  json?: (options: JsonBytesOptions) => JsonBodyParse;
}

/**
 * Decompresses a body as it arrives and checks it is UTF-8 once it is complete; it is decoded
 * when its text is first asked for. undici's `request` does not decompress (its
 * `interceptors.decompress` would, but reports a corrupt stream like a dropped socket; here the
 * two stay apart).
 *
 * The bytes are kept outside the JavaScript heap and decoded in one call. Decoding chunk by chunk
 * made a string per chunk and a rope that JSON.parse then copied flat (~2.7x the heap garbage);
 * and a page fetched ahead of the sinks waits as bytes, not as text or parsed rows, which V8
 * would otherwise move into its old generation (see ExportClient.fetchPage).
 *
 * UTF-8 is decoded strictly: a page with an invalid byte sequence is refused rather than read
 * with U+FFFD in place of data. A leading BOM is dropped.
 */
export async function readBody(body: Readable, encoding: string | string[] | undefined): Promise<ReadBody> {
  const codings = contentCodings(encoding);
  const decompressors = decompressorChain(codings);
  if (typeof decompressors === 'string') {
    // Not read on: a body we cannot decode would hold the connection until it ends. undici's
    // body emits 'error' (AbortError) when destroyed; unheard, that would crash the process.
    body.on('error', () => undefined);
    body.destroy();
    return { text: () => '', undecodable: { detail: `content-encoding "${decompressors}" is not supported (asked for gzip, br)`, transient: false } };
  }
  const received = await receiveBytes(body, codings, decompressors);
  return 'failed' in received ? received.failed : decodeUtf8(received.bytes, received.owned);
}

/** The decompressors that undo `codings`, or the first coding none can undo. */
function decompressorChain(codings: readonly string[]): Transform[] | string {
  const decompressors: Transform[] = [];
  // Applied in the order listed, so undone in reverse (RFC 9110 §8.4).
  for (const coding of [...codings].reverse()) {
    const decompressor = decompressorFor(coding);
    if (decompressor === undefined) return coding;
    decompressors.push(decompressor);
  }
  return decompressors;
}

/**
 * Reads the whole body through the decompressors into one buffer; a stream they cannot decode,
 * or gzip data no content-encoding declared, is a failed body instead.
 */
async function receiveBytes(
  body: Readable,
  codings: readonly string[],
  decompressors: Transform[],
): Promise<{ bytes: Buffer; owned: boolean } | { failed: ReadBody }> {
  const chunks: Buffer[] = [];
  let bodyBytes = 0;
  let receivedBytes = 0;
  let undeclaredGzip = false;
  // Counts the bytes as received (before decompression), for messages about a body we could not decode.
  const counter = decompressors.length === 0 ? undefined : new PassThrough();
  counter?.on('data', (chunk: Buffer) => (receivedBytes += chunk.length));
  const keep = (chunk: Buffer): void => {
    // gzip magic with no content-encoding: decoding it would be a guess, and parsing it as
    // JSON would print binary in the error.
    if (bodyBytes === 0 && codings.length === 0 && chunk.length >= 2 && chunk[0] === 0x1f && chunk[1] === 0x8b) undeclaredGzip = true;
    bodyBytes += chunk.length;
    if (!undeclaredGzip) chunks.push(chunk);
  };

  const decompressorErrors = new Set<unknown>();
  for (const decompressor of decompressors) decompressor.on('error', (error) => decompressorErrors.add(error));
  try {
    const collect = async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) keep(chunk);
    };
    const stages = counter === undefined ? [body, collect] : [body, counter, ...decompressors, collect];
    // pipeline's overloads do not take a spread of transforms; at run time it does.
    await (pipeline as (...streams: unknown[]) => Promise<void>)(...stages);
  } catch (error) {
    if (!decompressorErrors.has(error)) throw error;
    const { code, message } = error as { code?: string; message: string };
    // "unexpected end of file": the stream stopped early. Any other decoder error is a corrupt
    // stream (a bad block, a checksum, a proxy that mangled the bytes). Both are retried: the
    // service compressed a correct answer, and a nightly export should not die of one response
    // that the next attempt most likely gets whole. A stream that is corrupt on every attempt
    // still fails, once attempts or the run's retry budget run out (export_body_corrupt).
    const truncated = code === 'Z_BUF_ERROR' || /unexpected end/i.test(message);
    return {
      failed: {
        text: () => '',
        undecodable: {
          detail: `content-encoding ${codings.join(', ')} could not be decoded (${truncated ? 'stream cut short' : 'corrupt stream'}: ${message}) after ${receivedBytes} bytes`,
          transient: true,
          encoding: codings.join(', '),
        },
      },
    };
  }

  if (undeclaredGzip) {
    return {
      failed: { text: () => '', undecodable: { detail: `body of ${bodyBytes} bytes is gzip data but content-encoding does not say so`, transient: false } },
    };
  }
  // A single chunk is undici's (or a decompressor's) buffer; concatenated bytes are ours alone.
  return chunks.length === 1 ? { bytes: chunks[0]!, owned: false } : { bytes: Buffer.concat(chunks, bodyBytes), owned: true };
}

/**
 * Gives a body's bytes back to the allocator once they are decoded, when this module made them
 * and they fill their ArrayBuffer: otherwise they stay allocated, outside the heap, until V8
 * collects the Buffer, and a page fetched ahead has usually been promoted by then, so that is the
 * next full collection (measured: ~15-20 MB of a 100k-row run's peak RSS were such bytes).
 */
function release(bytes: Buffer, owned: boolean): void {
  const buffer = bytes.buffer;
  // ArrayBuffer.prototype.transfer (ES2024, Node 22+; the project's lib is ES2023): detaching
  // to length 0 frees the old backing store at once.
  if (owned && buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength)
    (buffer as ArrayBuffer & { transfer(length: number): ArrayBuffer }).transfer(0);
}

/** The body's text, decoded strictly as UTF-8 when first asked for (a leading BOM dropped), or why it cannot be. */
function decodeUtf8(bytes: Buffer, owned: boolean): ReadBody {
  if (isUtf8(bytes)) {
    const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    let held: Buffer | undefined = bytes;
    let text: string | undefined;
    return {
      text: () => {
        if (held !== undefined) {
          text = held.toString('utf8', start);
          release(held, owned);
          held = undefined;
        }
        return text ?? '';
      },
      json: (options) => {
        if (held === undefined) return parseJsonBody(text ?? '', options.literalsMatter);
        const parse = parseJsonBytes(held.subarray(start), options);
        if (parse.ok) {
          release(held, owned);
          held = undefined;
        }
        return parse;
      },
    };
  }
  const strict = new TextDecoder('utf-8', { fatal: true });
  let text: string;
  try {
    // In streaming mode an incomplete sequence at the very end is held back, not refused, so
    // an invalid sequence (refused here) and a body cut inside a character (below) stay apart.
    text = strict.decode(bytes, { stream: true });
  } catch {
    // Read on, leniently, only so that an error answer can still be quoted.
    const lenient = new TextDecoder('utf-8').decode(bytes);
    return { text: () => lenient, undecodable: { detail: 'body is not valid UTF-8', transient: false } };
  }
  try {
    strict.decode();
  } catch {
    return { text: () => text, undecodable: { detail: 'body ends inside a UTF-8 character', transient: true } };
  }
  // Unreachable in practice (isUtf8 said no, TextDecoder found nothing); decoded as it read.
  return { text: () => text };
}
