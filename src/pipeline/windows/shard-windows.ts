/**
 * Which windows of a backfill one of `count` workers runs (an Indexed Job's pod, a Cloud Run job's
 * task): contiguous, balanced slices in window order, so every window goes to exactly one worker,
 * the sizes differ by at most one, and a worker's failed windows merge into few re-run ranges.
 * Contiguous rather than round-robin: the windows of one pod are one date range in its logs.
 */
export interface Shard {
  /** 0-based. */
  index: number;
  count: number;
}

export function shareOf<T>(items: readonly T[], shard: Shard): T[] {
  if (!Number.isInteger(shard.count) || shard.count < 1) throw new RangeError(`shard count must be a whole number >= 1, got ${shard.count}`);
  if (!Number.isInteger(shard.index) || shard.index < 0 || shard.index >= shard.count)
    throw new RangeError(`shard index must be from 0 to ${shard.count - 1}, got ${shard.index}`);
  const start = Math.floor((shard.index * items.length) / shard.count);
  const end = Math.floor(((shard.index + 1) * items.length) / shard.count);
  return items.slice(start, end);
}
