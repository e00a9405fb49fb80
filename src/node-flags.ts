/**
 * The one place node's runtime flags for tilehouse are written, and the relaunch that applies
 * them wherever tilehouse starts: the image's ENTRYPOINT and NODE_OPTIONS (the Dockerfile repeats
 * them; test/deploy/dockerfile.test.ts holds the two equal), the manifests' NODE_OPTIONS
 * (src/deploy/deploy-settings.ts), `npx tilehouse` in a checkout (bin/tilehouse.js) and the bundle
 * started by hand. Why each flag: bench/README.md, "Memory".
 */

/**
 * NODE_OPTIONS:
 * - V8's old-space ceiling: Node sizes it from the container's memory limit, and under ~2 GB V8
 *   collects its old generation every few MB (~30% more CPU per row in the bench); at 2048 MB it
 *   grows its heap by up to 4x the live size between full collections (its large-heap mode).
 * - The young generation: Node 24's V8 lets each semi-space grow to 64 MB (Node 20's: 16 MB), and
 *   a run's short-lived garbage (page slices, parsed rows) fills them: at 1M rows that was ~100 MB
 *   of peak RSS. 8 MB keeps a page's garbage young without the extra CPU of a smaller one.
 */
export const NODE_OPTIONS = '--max-old-space-size=2048 --max-semi-space-size=8';

/**
 * node's own flags before the script: V8 flags NODE_OPTIONS may not carry (Node allows only a few
 * there). `v8.setFlagsFromString` at run time takes --heap-growing-percent but not the heap's
 * sizes above (V8 sizes its heap before any script runs: a semi-space set so stays at 64 MB,
 * measured), so a start without NODE_OPTIONS' flags relaunches either way.
 * - --liftoff-only: undici parses HTTP in WebAssembly, and V8 optimizing that module with TurboFan
 *   at the first connection cost ~20 MB of peak RSS; its baseline (Liftoff) code showed no CPU
 *   difference per row in the bench.
 * - --heap-growing-percent=200: after each full collection V8 lets the old generation grow to a
 *   multiple of what survived before the next; in its large-heap mode it picks up to 4x, and at a
 *   run's ~17 MB live that multiple, mostly garbage, was the peak. A fixed 3x: 1M rows 159 ->
 *   142 MB at 1.02-1.03x CPU per row, rows/s unchanged; 2.75x (=175) saved 6 MB more at 1.04-1.06x
 *   CPU and 0.93-0.96x rows/s, 2x cost 11 % CPU (bench/README.md, issue 39's second round).
 */
export const NODE_ARGS: readonly string[] = ['--liftoff-only', '--heap-growing-percent=200'];

/**
 * Set in the environment of the relaunched process, so that it never relaunches again. Set it
 * yourself (to anything) to run tilehouse under exactly the flags you started node with.
 */
export const RELAUNCHED_ENV = 'TILEHOUSE_RELAUNCHED';

/** The flag's name: `--max-semi-space-size` of `--max-semi-space-size=8`; `_` and `-` alike, as node reads them. */
function flagName(flag: string): string {
  const name = flag.split('=')[0]!;
  return `--${name.replace(/^-+/, '').replaceAll('_', '-')}`;
}

function words(text: string | undefined): string[] {
  return (text ?? '').split(/\s+/).filter((word) => word !== '');
}

export interface Relaunch {
  /** node's arguments for the new process image (argv[0] included), or undefined when nothing is missing. */
  argv: string[];
  env: NodeJS.ProcessEnv;
}

/**
 * What relaunching this process with the flags takes, or undefined when it already runs with
 * them (a flag counts as given when its name is, whatever its value: a value of the user's own
 * wins) or has been relaunched once. bin/tilehouse.js's `#!` line gives node exactly tilehouse's
 * flags, which would win over the same flag in the user's NODE_OPTIONS (node's rule: its command
 * line over NODE_OPTIONS): a flag of ours whose name NODE_OPTIONS gives another value is dropped
 * and the process relaunched, so the user's value wins there too.
 */
export function relaunchFor(process: { execPath: string; execArgv: readonly string[]; argv: readonly string[]; env: NodeJS.ProcessEnv }): Relaunch | undefined {
  if (process.env[RELAUNCHED_ENV] !== undefined) return undefined;
  const userOptions = new Map(words(process.env.NODE_OPTIONS).map((flag) => [flagName(flag), flag]));
  const ours = new Set([...words(NODE_OPTIONS), ...NODE_ARGS]);
  const overridden = (flag: string) => ours.has(flag) && userOptions.has(flagName(flag)) && userOptions.get(flagName(flag)) !== flag;
  const execArgv = process.execArgv.filter((flag) => !overridden(flag));
  const given = new Set([...execArgv, ...userOptions.values()].map(flagName));
  const missingOptions = words(NODE_OPTIONS).filter((flag) => !given.has(flagName(flag)));
  const missingArgs = NODE_ARGS.filter((flag) => !given.has(flagName(flag)));
  if (missingOptions.length === 0 && missingArgs.length === 0 && execArgv.length === process.execArgv.length) return undefined;
  const nodeOptions = [...words(process.env.NODE_OPTIONS), ...missingOptions].join(' ');
  return {
    argv: [process.execPath, ...execArgv, ...missingArgs, ...process.argv.slice(1)],
    env: { ...process.env, [RELAUNCHED_ENV]: '1', ...(nodeOptions === '' ? {} : { NODE_OPTIONS: nodeOptions }) },
  };
}

/**
 * Replaces this process with node started under tilehouse's flags (process.execve: same process
 * id, same stdin/stdout/stderr, so signals, pipes and the exit code are the new image's), when it
 * runs without them. Call it before anything else is started: pending work of this image is gone.
 * Where process.execve does not exist (Windows, Node < 23.11) this process runs on as it is.
 */
export function relaunchWithNodeFlags(): void {
  const relaunch = relaunchFor(process);
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  if (relaunch === undefined || typeof execve !== 'function' || process.platform === 'win32') return;
  execve.call(process, process.execPath, relaunch.argv, relaunch.env);
}
