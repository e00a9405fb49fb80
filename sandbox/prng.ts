/**
 * mulberry32: a 32-bit seeded PRNG. Not cryptographic, but tiny and fast (one million incidents
 * draw ~15 million numbers), and the same seed always yields the same stream on every platform,
 * which is what makes the sandbox's data — and so the demo's output — reproducible.
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Index drawn from cumulative weights (which must end at 1). */
export function pickWeighted(random: () => number, cumulative: readonly number[]): number {
  const r = random();
  for (let i = 0; i < cumulative.length; i++) {
    if (r < cumulative[i]!) return i;
  }
  return cumulative.length - 1;
}

/** Turns weights into the cumulative form `pickWeighted` expects. */
export function cumulativeWeights(weights: readonly number[]): number[] {
  const total = weights.reduce((sum, w) => sum + w, 0);
  let running = 0;
  return weights.map((w) => (running += w / total));
}
