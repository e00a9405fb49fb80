import { randomBytes } from 'node:crypto';

/** A random positive 63-bit id, as Java's writers choose them. */
export function newSnapshotId(): bigint {
  const id = BigInt.asUintN(63, randomBytes(8).readBigUInt64BE());
  return id === 0n ? 1n : id;
}
