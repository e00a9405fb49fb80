import { pino, type Logger, type DestinationStream } from 'pino';
import { redactText } from './redaction.js';
import { excerpt } from './secret-scrubber.js';

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

/** pino's levels, most verbose first; `silent` logs nothing. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}

export interface LoggerOptions {
  level?: LogLevel;
  /** One short human line per event instead of JSON (a terminal). Default: false. */
  human?: boolean;
  /** Default: stderr. The CLI passes its own stderr wrapper (scrubbed, safe on a closed pipe). */
  destination?: DestinationStream;
  /** Fields added to every line (the current span's trace_id and span_id when tracing is on). */
  mixin?: () => Record<string, unknown>;
}

const LEVEL_NAMES: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Fields every line has, or that a human line shows elsewhere (the job prefix) or never (objects). */
const NOT_SHOWN = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname', 'job', 'tile', 'runId', 'err', 'summary', 'trace_id', 'span_id']);
const MAX_FIELD_CHARS = 80;

function clock(time: unknown): string {
  const date = typeof time === 'number' ? new Date(time) : new Date();
  return [date.getHours(), date.getMinutes(), date.getSeconds()].map((part) => String(part).padStart(2, '0')).join(':');
}

function shownValue(value: unknown): string | undefined {
  if (typeof value === 'string') return excerpt(value, MAX_FIELD_CHARS);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' || typeof item === 'number')) return shownValue(value.join(','));
  return undefined;
}

/**
 * One JSON log line as one human line: `12:04:05 WARN  incidents_by_type: page request failed;
 * retrying page=3 attempt=2`. Scalar fields follow the message; objects (the run summary, which
 * is printed at the end anyway) are left to the JSON logs. An error's stack, logged only at
 * debug, follows on indented lines.
 */
export function humanLogLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = (LEVEL_NAMES[entry.level as number] ?? String(entry.level)).padEnd(5);
  const message = String(entry.msg ?? '');
  // The job names the line, unless the message already does ("job x succeeded: …").
  const prefix = typeof entry.job === 'string' && !message.includes(entry.job) ? `${entry.job}: ` : '';
  const fields: string[] = [];
  for (const [key, value] of Object.entries(entry)) {
    if (NOT_SHOWN.has(key)) continue;
    const shown = shownValue(value);
    if (shown !== undefined) fields.push(`${key}=${shown}`);
  }
  let line = `${clock(entry.time)} ${level} ${prefix}${message}${fields.length > 0 ? ` ${fields.join(' ')}` : ''}\n`;
  const err = entry.err as { message?: unknown; stack?: unknown } | undefined;
  if (typeof err?.stack === 'string') line += `  ${err.stack.split('\n').join('\n  ')}\n`;
  else if (typeof err?.message === 'string') line += `  ${err.message}\n`;
  return line;
}

/** A destination that turns pino's JSON lines into human lines before handing them on. */
function humanDestination(destination: DestinationStream): DestinationStream {
  return { write: (line: string) => destination.write(humanLogLine(line)) };
}

/** The one logger factory: JSON lines for machines (CronJob logs), one human line per event on a terminal. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    level: options.level ?? 'info',
    base: { service: 'tilehouse' },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Every line, at every level and to any destination, is scrubbed of secret values. pino hands
    // over one whole line per write, so a secret is never split across two calls.
    hooks: { streamWrite: redactText },
    ...(options.mixin === undefined ? {} : { mixin: options.mixin }),
  };
  const destination = options.destination ?? pino.destination({ fd: 2, sync: true });
  return pino(settings, options.human === true ? humanDestination(destination) : destination);
}
