import { pino, type Logger, type DestinationStream } from 'pino';

export type { Logger } from 'pino';

/**
 * Field paths that can carry a credential. Redaction is a second line of defence: the code never
 * logs a request body or header in the first place.
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
  /** Human-readable output; default: when stdout is a TTY. */
  pretty?: boolean;
  destination?: DestinationStream;
}

/** The one logger factory: JSON lines for machines (CronJob logs), pretty lines on a terminal. */
export async function createLogger(options: LoggerOptions = {}): Promise<Logger> {
  const settings = {
    level: options.level ?? process.env.TILEHOUSE_LOG_LEVEL ?? 'info',
    base: { service: 'tilehouse' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  if (options.destination) return pino(settings, options.destination);
  const pretty = options.pretty ?? process.stdout.isTTY === true;
  if (!pretty) return pino(settings);
  // Loaded only on a terminal: it costs cold-start time a CronJob should not pay.
  const { default: prettyStream } = await import('pino-pretty');
  return pino(settings, prettyStream({ colorize: true, sync: true, ignore: 'pid,hostname,service' }));
}
