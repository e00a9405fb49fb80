// The source connection and clock a run of windows shares, its own module: catch-up opens it
// before it picks its windows, the backfill after; neither needs the other's window loop for it.
import type { Dispatcher } from 'undici';
import type { EnvironmentConfig } from '../../config/environment-schema.js';
import type { LoadedJob } from '../../config/load-config.js';
import type { ClientCredentials } from '../../config/secrets.js';
import type { Logger } from '../../log.js';
import { RunToken } from '../../source/session-token.js';
import { createSourceDispatcher, measureServerClockOffset, type RetrySettings } from '../source-session.js';
import { SourceClockUnknownError } from './window-errors.js';

/**
 * Whose clock placed the windows: the source's, with the offset measured from its token answer's
 * `Date` (null: given by the caller, not measured), or this machine's (`source.clock: local`).
 */
export type WindowClock = { basis: 'source'; offsetSeconds: number | null } | { basis: 'local' };

/** The source connection every window of a run shares: one dispatcher, one token, the source's clock. */
export interface WindowSession {
  dispatcher: Dispatcher;
  runToken: RunToken;
  /** The source's clock, which the rw windows are relative to. */
  now: () => Date;
  clock: WindowClock;
  close(): Promise<void>;
}

/** What opening a window session takes (a backfill's options carry all of it). */
interface WindowSessionOptions {
  environment: EnvironmentConfig;
  credentials: ClientCredentials;
  logger: Logger;
  retry?: RetrySettings;
  signal?: AbortSignal;
  /**
   * The source's clock, which the rw windows are relative to; default: ours corrected by the
   * offset read from the token issuer's HTTP `Date` (see measureServerClockOffset).
   */
  now?: () => Date;
  /** The environment file, named by the message of a source whose clock is unknown. */
  configFile?: string;
}

/**
 * Opens the connection the windows share and reads the source's clock through it (the token
 * fetched for the clock is the one the windows then use). A caller that must know the source's
 * today before it picks the windows (catch-up) opens it first and passes it to runBackfill.
 */
export async function openWindowSession(
  job: LoadedJob,
  options: WindowSessionOptions & {
    /** A token the caller already shares across its jobs (`plan`): its response's `Date` gives the clock. */
    runToken?: RunToken;
  },
): Promise<WindowSession> {
  const dispatcher = createSourceDispatcher();
  const runToken = options.runToken ?? new RunToken();
  try {
    const { now, clock } =
      options.now === undefined
        ? await sourceClock(job, { ...options, dispatcher, runToken })
        : { now: options.now, clock: { basis: 'source' as const, offsetSeconds: null } };
    return { dispatcher, runToken, now, clock, close: () => dispatcher.close() };
  } catch (error) {
    await dispatcher.close();
    throw error;
  }
}

/**
 * The source's clock: the only window operator the API shows, `rw`, counts days back from the
 * server's "now", so windows computed from our clock drift by the difference (a whole day near
 * midnight, or everything when a clock is far off). Read once per backfill, logged. Without a
 * `Date` to read it from, windowed work stops (source_clock_unknown) unless the environment says
 * `source.clock: local`; an offset is logged only when one was measured.
 */
async function sourceClock(
  job: LoadedJob,
  options: Omit<WindowSessionOptions, 'now'> & { dispatcher: Dispatcher; runToken: RunToken },
): Promise<{ now: () => Date; clock: WindowClock }> {
  if (options.environment.source.clock === 'local') {
    options.logger.warn({ clock: 'local' }, "windows follow this machine's clock (source.clock: local); the source's clock was not read");
    return { now: () => new Date(), clock: { basis: 'local' } };
  }
  const reading = await measureServerClockOffset(job, options);
  if (reading.offsetMs === undefined) throw new SourceClockUnknownError(job.name, reading.tokenUrl, reading.unparsed, options.configFile);
  const offsetMs = reading.offsetMs;
  const seconds = Math.round(offsetMs / 1000);
  const size = Math.abs(seconds) >= 86_400 ? `${(Math.abs(seconds) / 86_400).toFixed(1)} days` : `${Math.abs(seconds)} s`;
  options.logger[Math.abs(seconds) > 60 ? 'warn' : 'info'](
    { clock: 'source', offsetSeconds: seconds },
    `source clock is ${size} ${seconds < 0 ? 'behind' : 'ahead of'} ours; windows follow the source's clock`,
  );
  return { now: () => new Date(Date.now() + offsetMs), clock: { basis: 'source', offsetSeconds: seconds } };
}
