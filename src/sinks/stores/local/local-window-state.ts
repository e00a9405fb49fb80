import { readFile } from 'node:fs/promises';
import { holdings, WindowStateUnreadableError, type HeldWindow, type WindowHoldings } from '../../window-state.js';
import { manifestPathOf, sha256Of } from '../manifest.js';
import { type ManifestFields, wasOpen } from '../window-open.js';

/**
 * A local file target holds a window when the manifest beside the window's file matches the file
 * (sha256): the manifest is renamed in right after the file, so a file without its manifest, or
 * beside the previous run's, is a window that did not finish. A missing file or manifest is "not
 * done"; any other read error is an error, not a guess.
 */
export async function localWindowsHeld(
  windows: readonly HeldWindow[],
  targets: readonly string[],
  context: { jobName: string; template: string; timezone: string },
): Promise<WindowHoldings> {
  const absent = (error: unknown): undefined => {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new WindowStateUnreadableError(`job ${context.jobName}: cannot read ${context.template}'s state: ${(error as Error).message}`, { cause: error });
  };
  const held = holdings();
  for (const [index, window] of windows.entries()) {
    const target = targets[index]!;
    const text = await readFile(manifestPathOf(target), 'utf8').catch(absent);
    if (text === undefined) continue;
    let manifest: ManifestFields & { sha256?: unknown };
    try {
      manifest = JSON.parse(text) as ManifestFields & { sha256?: unknown };
    } catch {
      continue; // a manifest cut short by a crash mid-write: that window did not finish
    }
    if (typeof manifest.sha256 === 'string' && manifest.sha256 === (await sha256Of(target).catch(absent))) {
      (wasOpen(manifest, window, context.timezone) ? held.open : held.done).add(window.from);
    }
  }
  return held;
}
