import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `condition` every `everyMs` until it holds; throws naming `what` once `withinMs` has passed
 * (or at once when `gaveUp` says the thing awaited can no longer come, a child that exited). A
 * deadline on a wait, not a promise about speed: it only stops a loop that would otherwise spin
 * past the test's own timeout.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  what: string,
  options: { withinMs?: number; everyMs?: number; gaveUp?: () => boolean } = {},
): Promise<void> {
  const deadline = Date.now() + (options.withinMs ?? 30_000);
  while (!(await condition())) {
    if (options.gaveUp?.() === true) throw new Error(`${what}: it can no longer happen`);
    if (Date.now() > deadline) throw new Error(`${what}: not within ${options.withinMs ?? 30_000} ms`);
    await sleep(options.everyMs ?? 20);
  }
}
