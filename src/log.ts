import { pino, type Logger, type DestinationStream } from 'pino';
import { scrubSecrets } from './secret-scrubber.js';

export type { Logger } from 'pino';

/**
 * Field paths that can carry a credential. Redaction is a second line of defence: the code never
 * logs a request body or header in the first place. A secret inside a text (an issuer's
 * error_description that echoes it) is caught by value instead: see secret-scrubber.ts.
 */
export const REDACTED_PATHS = [
  'clientSecret',
  'client_secret',
  'accessToken',
  'access_token',
  'token',
  'authorization',
  '*.clientSecret',
  '*.client_secret',
  '*.accessToken',
  '*.access_token',
  '*.token',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'credentials',
  '*.credentials',
];

export interface LoggerOptions {
  level?: string;
  /** Human-readable output; default: when the destination (default stdout) is a TTY. */
  pretty?: boolean;
  /** Default: stdout. The CLI passes its own stdout wrapper (scrubbed, safe on a closed pipe). */
  destination?: DestinationStream;
}

function isTerminal(stream: unknown): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}

/** The one logger factory: JSON lines for machines (CronJob logs), pretty lines on a terminal. */
export async function createLogger(options: LoggerOptions = {}): Promise<Logger> {
  const settings = {
    level: options.level ?? process.env.TILEHOUSE_LOG_LEVEL ?? 'info',
    base: { service: 'tilehouse' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Every line, at every level and to any destination, is scrubbed of secret values. pino hands
    // over one whole line per write, so a secret is never split across two calls.
    hooks: { streamWrite: scrubSecrets },
  };
  const { destination } = options;
  const pretty = options.pretty ?? isTerminal(destination ?? process.stdout);
  if (!pretty) return destination === undefined ? pino(settings) : pino(settings, destination);
  // Loaded only on a terminal: it costs cold-start time a CronJob should not pay.
  const { default: prettyStream } = await import('pino-pretty');
  const prettyOptions = { colorize: true, sync: true, ignore: 'pid,hostname,service' };
  return pino(settings, prettyStream(destination === undefined ? prettyOptions : { ...prettyOptions, destination }));
}
