import { mapWithConcurrency } from '../../map-with-concurrency.js';
import { parseTimestamp } from '../../transform/index.js';
import { holdings, type HeldWindow, type WindowHoldings } from '../window-state.js';

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

/** Manifests and objects of this many windows are read at a time (each window: two small requests). */
const OBJECT_STATE_CONCURRENCY = 8;

/** How an object store reads one window's manifest and object; undefined: there is none. */
export interface ObjectStateReads {
  manifestText(target: string): Promise<string | undefined>;
  /** The object's run id (the metadata every object tilehouse writes carries) and size. */
  stored(target: string): Promise<{ runId: unknown; size: number } | undefined>;
}

/**
 * The windows an object store's targets hold (gs://, s3://): a window's object is held when the
 * manifest object beside it describes it, its run id and size being the manifest's. The manifest
 * goes into place right after the object, so a new object beside the previous run's manifest (a
 * run that died between the two) has another run id: not held. Asking for metadata, not hashing
 * the object, keeps a window to two small requests however large it is. A read that fails for
 * another reason than absence throws (each store's `reads` say how), never a guess.
 */
export async function objectWindowsHeld(
  windows: readonly HeldWindow[],
  targets: readonly string[],
  timezone: string,
  reads: ObjectStateReads,
): Promise<WindowHoldings> {
  const stateOf = async (target: string, window: HeldWindow): Promise<'done' | 'open' | 'not'> => {
    const text = await reads.manifestText(target);
    if (text === undefined) return 'not';
    let manifest: ManifestFields & { runId?: unknown; bytes?: unknown };
    try {
      manifest = JSON.parse(text) as typeof manifest;
    } catch {
      return 'not'; // not a manifest tilehouse wrote whole: that window did not finish
    }
    const stored = await reads.stored(target);
    if (stored === undefined || typeof manifest.runId !== 'string') return 'not';
    if (stored.runId !== manifest.runId || stored.size !== manifest.bytes) return 'not';
    return wasOpen(manifest, window, timezone) ? 'open' : 'done';
  };
  const states = await mapWithConcurrency(
    targets.map((target, index) => ({ target, window: windows[index]! })),
    OBJECT_STATE_CONCURRENCY,
    ({ target, window }) => stateOf(target, window),
  );
  const held = holdings();
  windows.forEach((window, index) => {
    const state = states[index];
    if (state === 'done' || state === 'open') held[state].add(window.from);
  });
  return held;
}
