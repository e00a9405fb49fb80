import { randomBytes } from 'node:crypto';

/**
 * A fresh UUIDv7 (RFC 9562), as the OpenLineage clients make run ids: its 48-bit time is `instantMs`
 * (when the try started, so a job's tries sort by time) and its 74 other bits are random, drawn
 * anew for every tile run of every process. Never derived from tilehouse's run id: the spec's run
 * cycle makes COMPLETE, FAIL and ABORT final, so a retry with the same --run-id must be a run of
 * its own (docs/lineage.md, "Run id"), and a try cannot know of another try without state shared
 * between processes.
 */
export function newUuidV7(instantMs: number): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(Math.max(0, Math.min(Math.trunc(instantMs), 2 ** 48 - 1)), 0, 6);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
