import type { FaultKind } from './faults.js';

export type Endpoint = 'token' | 'export' | 'other';

/** One request as the sandbox saw it; tests count and inspect these. */
export interface RecordedRequest {
  /** 1-based arrival order over all endpoints. */
  readonly seq: number;
  readonly endpoint: Endpoint;
  /** 1-based arrival order among requests to the same endpoint. */
  readonly call: number;
  readonly method: string;
  /** Path and query string. */
  readonly path: string;
  /** The tile id from the query string (export), else null. */
  readonly tileId: string | null;
  /** `options.pageNumber` / `options.itemsPerPage` of an export body that could be read, else null. */
  pageNumber: number | null;
  itemsPerPage: number | null;
  /** The HTTP status sent; null while in flight or when the connection was reset without a response. */
  status: number | null;
  /** Faults applied to this request, in order (`concurrency-limit` = refused by maxConcurrentExports). */
  readonly faults: (FaultKind | 'concurrency-limit')[];
  /** Wall-clock epoch ms. */
  readonly receivedAt: number;
  respondedAt: number | null;
  /** Export requests in flight when this one arrived, itself included (0 for a request that was refused or is not an export). */
  readonly inFlight: number;
}
