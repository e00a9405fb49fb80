/**
 * Runs the sandbox as its own process (the benchmark uses this so the sandbox does not share an
 * event loop with the client it measures):
 *
 *   npx tsx sandbox/main.ts --port 8787 [--incidents N] [--latency-ms M] [--seed S]
 *       [--max-concurrent-exports K] [--token-lifetime-seconds T] [--host H] [--now ISO]
 *       [--gzip] [--bandwidth-mbps B]
 *
 * The first line on stdout is the base URL and nothing else, so a parent process can read it;
 * credentials and settings go to stderr. Runs until SIGTERM or SIGINT.
 */
import { parseArgs } from 'node:util';
import { startSandbox, type SandboxOptions } from './sandbox.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string' },
    port: { type: 'string', default: '8787' },
    incidents: { type: 'string' },
    'latency-ms': { type: 'string' },
    seed: { type: 'string' },
    'max-concurrent-exports': { type: 'string' },
    'token-lifetime-seconds': { type: 'string' },
    now: { type: 'string' },
    gzip: { type: 'boolean', default: false },
    'bandwidth-mbps': { type: 'string' },
  },
  strict: true,
});

function numberOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) {
    process.stderr.write(`--${name} must be a number, got '${text}'\n`);
    process.exit(2);
  }
  return n;
}

const options: SandboxOptions = {
  host: values.host,
  port: numberOption('port', values.port),
  incidents: numberOption('incidents', values.incidents),
  latencyMs: numberOption('latency-ms', values['latency-ms']),
  seed: numberOption('seed', values.seed),
  maxConcurrentExports: numberOption('max-concurrent-exports', values['max-concurrent-exports']),
  tokenLifetimeSeconds: numberOption('token-lifetime-seconds', values['token-lifetime-seconds']),
  now: values.now === undefined ? undefined : new Date(values.now),
  compress: values.gzip ? true : undefined,
  bandwidthMbps: numberOption('bandwidth-mbps', values['bandwidth-mbps']),
};
// Leave unset options out so the sandbox's own defaults apply.
for (const key of Object.keys(options) as (keyof SandboxOptions)[]) if (options[key] === undefined) delete options[key];

const sandbox = await startSandbox(options);
process.stdout.write(`${sandbox.url}\n`);
process.stderr.write(
  `sandbox: client id ${sandbox.clientId}, client secret ${sandbox.clientSecret}, audience ${sandbox.audience}, ` +
    `${options.incidents ?? 500} incidents, now ${sandbox.now.toISOString()}\n`,
);

let stopping = false;
const stop = (): void => {
  if (stopping) return;
  stopping = true;
  void sandbox.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
