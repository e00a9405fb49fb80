import { randomBytes } from 'node:crypto';

/**
 * A run id sorts by time and is unique even when Kubernetes starts the same CronJob twice in the
 * same second: `20261121T213005Z-9f2c1a`.
 */
export function newRunId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}
