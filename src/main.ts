/**
 * The shipped bundle's entry (dist/bundle/tilehouse.js; scripts/bundle.mjs): relaunches node under
 * tilehouse's flags when started without them (src/node-flags.ts), before the CLI is loaded, so
 * that a relaunch costs a bare node start and not the CLI's modules twice. bin/tilehouse.js
 * imports it and calls runAsProcess; src/cli.ts is the same CLI run from source (through tsx).
 */
import { isEntryPoint } from './entry-point.js';
import { relaunchWithNodeFlags } from './node-flags.js';

export async function runAsProcess(): Promise<void> {
  const cli = await import('./cli.js');
  await cli.runAsProcess();
}

if (isEntryPoint(import.meta.url)) {
  relaunchWithNodeFlags();
  await runAsProcess();
}
