import { createHash } from 'node:crypto';

const STAMPED_RUN_ID = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/;

/**
 * The instant a tilehouse run id was made at, when it carries one (`newRunId`'s
 * `20261121T213005Z-9f2c1a`), else undefined: an orchestrator's own id carries no time we can trust.
 */
export function instantOfRunId(runId: string): number | undefined {
  const stamp = STAMPED_RUN_ID.exec(runId);
  if (stamp === null) return undefined;
  const [year, month, day, hour, minute, second] = stamp.slice(1).map(Number) as [number, number, number, number, number, number];
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * A UUIDv7 (RFC 9562) drawn from nothing random: its 48-bit time is `instantMs` and its 74 other
 * bits are the SHA-256 of `parts`, so the same tile run asked again (an orchestrator's retry with
 * the same --run-id) gets the same OpenLineage run id, as Airflow's provider derives its task runs'
 * ids from the logical date. `instantMs` undefined (no time to derive from): the time bits come
 * from the hash too; the id stays a valid, stable UUID that does not sort by time.
 */
export function derivedUuidV7(instantMs: number | undefined, parts: readonly string[]): string {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  const bytes = Buffer.alloc(16);
  if (instantMs === undefined) digest.copy(bytes, 0, 16, 22);
  else bytes.writeUIntBE(Math.max(0, Math.min(instantMs, 2 ** 48 - 1)), 0, 6);
  digest.copy(bytes, 6, 0, 10);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x70;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
