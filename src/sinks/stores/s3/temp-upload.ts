import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import type {
  CompleteMultipartUploadCommandOutput,
  CreateMultipartUploadCommandOutput,
  HeadObjectCommandOutput,
  UploadPartCommandOutput,
} from '@aws-sdk/client-s3';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { s3CodeOf, s3StatusOf } from './s3-errors.js';
import type { S3Requests } from './s3-requests.js';

/**
 * S3's smallest part (every part but the last), and the default: a run holds two (one uploading
 * while the next fills), 10 MiB, and a 5 GB object (the most one CopyObject publishes) is ~1000
 * parts, well under S3's 10,000.
 */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

export interface TempUploadOptions {
  requests: S3Requests;
  bucket: string;
  key: string;
  contentType: string;
  metadata: Record<string, string>;
  partBytes?: number;
}

/** The temp object once whole: its size (checked against what was sent) and ETag. */
export interface UploadedTemp {
  key: string;
  size: number;
  etag: string;
}

/**
 * The bytes of one run streamed to a temp key: held until a part's worth (5 MiB) is there, then
 * sent while the next part fills (one part in flight, so the export does not wait on each upload). A run that ends below one part is one PutObject; a larger one a multipart upload, whose
 * parts become an object only when CompleteMultipartUpload is answered. Every request carries
 * Content-MD5 (S3 refuses bytes that arrive different) and is retried by the writer's loop with
 * the same bytes; a repeated PutObject or part is harmless, and a repeated Complete whose first
 * answer was lost meets `NoSuchUpload`, judged by reading the temp key.
 *
 * On failure the multipart upload is aborted (`abortUpload`), so its parts stop costing; a run
 * killed before that leaves an incomplete upload under an owner-tagged temp key, which the sweep
 * aborts once its owner is gone (temp-keys.ts), and the bucket's AbortIncompleteMultipartUpload
 * lifecycle rule in any case (docs/s3.md).
 */
export class TempUpload extends Writable {
  /**
   * The part being filled: one buffer, grown by doubling up to a part and then reused for every
   * part, so the run holds one part's bytes (not the chunks and a joined copy of them).
   */
  private part: Buffer = Buffer.alloc(0);
  private partLength = 0;
  /** The other buffer: the part in flight while `part` fills, swapped when that part is sent. */
  private spare: Buffer = Buffer.alloc(0);
  /** The part being uploaded while the next fills (at most one: its buffer is `spare`). */
  private inFlight: Promise<void> | undefined;
  private sent = 0;
  private uploadId: string | undefined;
  private readonly parts: Array<{ PartNumber: number; ETag: string }> = [];
  private readonly partBytes: number;
  /** Set once the temp object is whole and verified. */
  finished: UploadedTemp | undefined;
  /** Whether a request that could have created the temp object was sent (a delete is then worth trying). */
  mayHaveCreated = false;

  constructor(private readonly options: TempUploadOptions) {
    super({ highWaterMark: 1024 * 1024 });
    this.partBytes = Math.max(MIN_PART_BYTES, options.partBytes ?? MIN_PART_BYTES);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.append(chunk);
    if (this.partLength < this.partBytes) {
      callback();
      return;
    }
    // The previous part must be answered before its buffer is filled again; then this one is
    // sent while the encoder goes on filling the other buffer.
    this.settled()
      .then(() => {
        const sending = this.sendPart(this.take());
        sending.catch(() => undefined); // awaited by the next write or by _final
        this.inFlight = sending;
        callback();
      })
      .catch(callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.settled()
      .then(() => this.complete())
      .then(() => callback(), callback);
  }

  /** Waits for the part in flight, if any; its failure is the upload's. */
  private async settled(): Promise<void> {
    const inFlight = this.inFlight;
    this.inFlight = undefined;
    await inFlight;
  }

  /** Aborts the multipart upload if one was started and not completed; failures are the caller's to name. */
  async abortUpload(requests: S3Requests): Promise<void> {
    // A part (or the upload's creation) still under way would outlive an abort sent now.
    await this.inFlight?.catch(() => undefined);
    if (this.uploadId === undefined || this.finished !== undefined) return;
    const { bucket, key } = this.options;
    const uploadId = this.uploadId;
    await requests.retrying('aborting the multipart upload of a temp object', async () => {
      try {
        await requests.once('AbortMultipartUpload', new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }));
      } catch (error) {
        if (s3CodeOf(error) !== 'NoSuchUpload') throw error;
      }
    });
    this.uploadId = undefined;
  }

  private append(chunk: Buffer): void {
    const needed = this.partLength + chunk.length;
    if (needed > this.part.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, Math.min(this.partBytes, Math.max(64 * 1024, this.part.length * 2))));
      this.part.copy(grown, 0, 0, this.partLength);
      this.part = grown;
    }
    chunk.copy(this.part, this.partLength);
    this.partLength = needed;
  }

  /** The part's bytes, a view of its buffer, which becomes the spare: the next part fills the other one. */
  private take(): Buffer {
    const bytes = this.part.subarray(0, this.partLength);
    [this.part, this.spare] = [this.spare, this.part];
    this.partLength = 0;
    return bytes;
  }

  private async sendPart(bytes: Buffer): Promise<void> {
    const { requests, bucket, key } = this.options;
    if (this.uploadId === undefined) {
      const created = await requests.send<CreateMultipartUploadCommandOutput>(
        'CreateMultipartUpload',
        new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: this.options.contentType, Metadata: this.options.metadata }),
      );
      this.uploadId = created.UploadId!;
    }
    const PartNumber = this.parts.length + 1;
    const answer = await requests.send<UploadPartCommandOutput>(
      'UploadPart',
      new UploadPartCommand({
        Bucket: bucket,
        Key: key,
        UploadId: this.uploadId,
        PartNumber,
        Body: bytes,
        ContentLength: bytes.length,
        ContentMD5: md5Of(bytes),
      }),
    );
    this.parts.push({ PartNumber, ETag: answer.ETag! });
    this.sent += bytes.length;
  }

  private async complete(): Promise<void> {
    const { requests, bucket, key } = this.options;
    const rest = this.take();
    this.mayHaveCreated = true;
    if (this.uploadId === undefined) {
      const answer = await requests.send<{ ETag?: string }>(
        'PutObject',
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: rest,
          ContentLength: rest.length,
          ContentMD5: md5Of(rest),
          ContentType: this.options.contentType,
          Metadata: this.options.metadata,
        }),
      );
      this.sent += rest.length;
      this.finished = await this.verified(answer.ETag);
      return;
    }
    if (rest.length > 0 || this.parts.length === 0) await this.sendPart(rest);
    const uploadId = this.uploadId;
    const etag = await requests.retrying('CompleteMultipartUpload', async (attempt) => {
      try {
        return (
          await requests.once<CompleteMultipartUploadCommandOutput>(
            'CompleteMultipartUpload',
            new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: this.parts } }),
          )
        ).ETag;
      } catch (error) {
        // A repeated Complete whose first answer was lost: the upload is gone because it completed.
        if (attempt > 1 && (s3CodeOf(error) === 'NoSuchUpload' || s3StatusOf(error) === 404)) return undefined;
        throw error;
      }
    });
    this.finished = await this.verified(etag);
  }

  /** The temp object, read back: whole only when its size is what was sent. */
  private async verified(etag: string | undefined): Promise<UploadedTemp> {
    const { requests, bucket, key } = this.options;
    const head = await requests.send<HeadObjectCommandOutput>('HeadObject', new HeadObjectCommand({ Bucket: bucket, Key: key }));
    if (head.ContentLength !== this.sent)
      throw new Error(`the temp object s3://${bucket}/${key} holds ${String(head.ContentLength)} bytes, ${this.sent} were sent`);
    return { key, size: this.sent, etag: head.ETag ?? etag ?? '' };
  }
}

function md5Of(bytes: Buffer): string {
  return createHash('md5').update(bytes).digest('base64');
}
