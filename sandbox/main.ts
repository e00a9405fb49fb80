/**
 * Runs the sandbox as its own process (the benchmark uses this so the sandbox does not share an
 * event loop with the client it measures):
 *
 *   npx tsx sandbox/main.ts --port 8787 [--incidents N] [--latency-ms M] [--seed S]
 *       [--max-concurrent-exports K] [--token-lifetime-seconds T] [--host H] [--now ISO]
 *       [--gzip] [--bandwidth-mbps B] [--echo request|saved-query|absent] [--replay FILE] [--help]
 *
 * The first line on stdout is the base URL and nothing else, so a parent process can read it;
 * credentials and settings go to stderr. Runs until SIGTERM or SIGINT.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ECHO_MODES, type EchoMode } from './export-endpoint.js';
import { parseRecording } from '../src/source/recording.js';
import { startSandbox, type SandboxOptions } from './sandbox.js';

const USAGE = `Usage: npx tsx sandbox/main.ts [--port P] [--host H] [--incidents N] [--seed S] [--now ISO]
       [--latency-ms M] [--max-concurrent-exports K] [--token-lifetime-seconds T]
       [--gzip] [--bandwidth-mbps B] [--echo request|saved-query|absent] [--replay FILE]

Serves the incident API's token and export endpoints (see sandbox/README.md). The first stdout
line is the base URL; runs until SIGTERM or SIGINT.

  --echo MODE      what result.query holds: request (default), saved-query (the tile's saved
                   query, pageNumber 0 on every page), absent
  --replay FILE    serve a recording made by \`tilehouse probe --record FILE\`
  -h, --help       show this help

Exit codes: 0 stopped by a signal or --help, 2 bad usage.
`;

const OPTIONS = {
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
  echo: { type: 'string' },
  replay: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A usage mistake: one line and the usage on stderr, exit 2, no stack trace. */
function usageError(message: string): never {
  process.stderr.write(`sandbox: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let parsed;
try {
  parsed = parseArgs({ options: OPTIONS, strict: true });
} catch (error) {
  usageError(error instanceof Error ? error.message : String(error));
}
const { values } = parsed;
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}

function numberOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) usageError(`--${name} must be a number, got '${text}'`);
  return n;
}

function echoOption(text: string | undefined): EchoMode | undefined {
  if (text === undefined) return undefined;
  if (!(ECHO_MODES as readonly string[]).includes(text)) usageError(`--echo must be one of ${ECHO_MODES.join(', ')}, got '${text}'`);
  return text as EchoMode;
}

function replayOption(file: string | undefined): SandboxOptions['replay'] {
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    usageError(`--replay ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    return parseRecording(text, file);
  } catch (error) {
    usageError(`--replay ${error instanceof Error ? error.message : String(error)}`);
  }
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
  echo: echoOption(values.echo),
  replay: replayOption(values.replay),
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
