import { parseTimestamp } from '../../transform/index.js';
import type { HeldWindow } from '../window-state.js';

/** The fields of a manifest (manifest.ts) the state is read from, as untrusted JSON. */
export type ManifestFields = { window?: { from?: unknown; to?: unknown; open?: unknown }; preparedAt?: unknown };

/**
 * Whether a published window was open. A manifest says so (`window.open`); one written before
 * that field existed is judged by when it was prepared against the end of its day on the job's
 * calendar, on the writing machine's clock (the only one it recorded). Prepared before the day
 * ended: open, exported once more (harmless: it replaces exactly its own file). After: closed, as
 * every such manifest counted before; only a machine clock ahead of the source's by more than
 * what was left of the day can take an open day for a closed one here. No time at all: open.
 */
export function wasOpen(manifest: ManifestFields, window: HeldWindow, timezone: string): boolean {
  if (typeof manifest.window?.open === 'boolean') return manifest.window.open;
  const prepared = typeof manifest.preparedAt === 'string' ? Date.parse(manifest.preparedAt) : Number.NaN;
  return Number.isNaN(prepared) || prepared < (parseTimestamp(window.to, timezone) as number);
}
